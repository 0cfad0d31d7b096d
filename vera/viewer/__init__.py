"""`vera view`: a local, read-only web app over run directories.

    serve(run_dirs, host=..., port=...)     index the runs and serve them until Ctrl-C (app)
    build_app(catalogue)                    the aiohttp application (app)
    Catalogue.open(run_dirs)                the index: frames to list and filter (catalogue)
    host_names, key_required, known_host    who may talk to it: Host names, the remote key (access)

The per-conversation pages it serves are the ones card.html links to; they belong to
the card and live below the viewer, in `vera.report.shared._pages` (render_conversation_page,
write_card_pages), so the card never imports the viewer.

Import from the modules: this package's __init__ stays empty so that importing one
module does not load the web server.
"""
