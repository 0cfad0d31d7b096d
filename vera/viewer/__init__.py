"""`vera view`: a local, read-only web app over run directories, and the per-conversation
pages that card.html links to.

    serve(run_dirs, host=..., port=...)     index the runs and serve them until Ctrl-C (app)
    build_app(catalogue)                    the aiohttp application (app)
    Catalogue.open(run_dirs)                the index: frames to list and filter (catalogue)
    render_conversation_page(page)          one conversation as a self-contained page (pages)
    write_card_pages(run_dir, linked, ...)  the pages of the conversations a card lists (pages)

Import from the modules: this package's __init__ stays empty so that the card, which
links to the pages, does not load the web server.
"""
