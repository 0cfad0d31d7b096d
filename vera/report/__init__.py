"""Everything read out of a finished run, in six subpackages by what they produce:
`card` (the typed card and its Markdown, HTML, terminal and plot renderings), `compare`
(comparisons, pooling, the release and sequential gates), `calibration` (human labels,
ratings plans, agreement), `exports`, `improvements` (what to fix first) and `shared`
(scoring frames, run status, number formats, tables, conversation pages).

Code outside vera.report imports the names below, never a subpackage. It reads runs
through `vera.store`; it never runs anything.
"""

from vera.report.calibration._agreement import (
    HumanAgreementReport,
    JudgeConsensusReport,
    RatingsFile,
    agreement_report,
)
from vera.report.calibration._agreement_text import (
    agreement_against_text,
    agreement_humans_text,
    confusion_csv_text,
    confusion_tables,
)
from vera.report.calibration._calibration import PLAN_RESAMPLES, ChatbotPlan, plan_ratings
from vera.report.calibration._human_import import ImportSummary, import_human_ratings
from vera.report.calibration._realism_agreement import (
    UserCheckAgreement,
    user_check_agreement,
    user_check_agreement_table,
)
from vera.report.card._plots import comparison_plots, sequence_plot
from vera.report.card._schema import Card, RunComparison
from vera.report.card._score import read_card, render_card_files, score_run, write_card_html
from vera.report.card._sequence import (
    GATE_FILE,
    SEQUENCE_FILE,
    SEQUENCE_PAGE,
    GateLook,
    GateRecord,
    GateSettings,
    failed_units,
    failed_words,
    left_out_line,
    left_out_words,
    over_allowance,
    read_gate,
    read_gate_file,
    read_sequence,
    row_verdict_words,
    sequence_page,
    sequential_failed_note,
    sequential_note,
    shown_rows,
    stopped_words,
    verdict_words,
    why_stopped,
)
from vera.report.card._tables import few_personas_note
from vera.report.card._terminal import by_column_text, headline, render_card
from vera.report.card._text import card_strings, state_words, status_text
from vera.report.compare._compare import compare_runs
from vera.report.compare._gate import GatePair, GateRow, GateVerdict, gate
from vera.report.compare._gate_text import gate_text, gate_verdict
from vera.report.compare._html import render_compare_html
from vera.report.compare._pool import Pooled, pool_scores, pooled_text, results_csv_ratings, run_ratings
from vera.report.compare._tables import compare_tables
from vera.report.exports._calls import export_calls, exported_call, no_bodies_reason
from vera.report.exports._humans import export_humans
from vera.report.exports._reference import export_reference
from vera.report.exports._results import export_run, spreadsheet_safe
from vera.report.improvements._report import (
    DEFAULT_EXEMPLARS,
    IMPROVEMENTS_CSP,
    MAX_EXEMPLARS,
    Improvements,
    build_improvements,
    exemplar_conversations,
    render_improvements,
    render_improvements_html,
    run_improvements,
    write_improvements,
)
from vera.report.improvements._report import Format as ImprovementsFormat
from vera.report.improvements._row_summary import (
    DEFAULT_LOW_SAMPLE,
    DEFAULT_TOP_QUESTIONS,
    RowSummary,
    summarize_rows,
)
from vera.report.shared._chat_markdown import chatbot_markdown, with_markdown_css
from vera.report.shared._numbers import fixed, num, percent_level
from vera.report.shared._outcome import (
    INTERRUPTED_PREFIX,
    Exit,
    RunStatus,
    run_status,
    state_label,
    summary_words,
    tally,
)
from vera.report.shared._pages import (
    PAGE_CSP,
    SCRIPT_PAGE_CSP,
    ArcPage,
    ArcSession,
    ConversationPage,
    page_name,
    rating_anchor,
    read_conversation_page,
    render_arc_page,
    render_conversation_page,
    slug,
)
from vera.report.shared._runs import read_run
from vera.report.shared._table import Table
from vera.report.shared._terminal import fit, render, rich_table, text_tables

__all__ = [
    "DEFAULT_EXEMPLARS",
    "DEFAULT_LOW_SAMPLE",
    "DEFAULT_TOP_QUESTIONS",
    "GATE_FILE",
    "IMPROVEMENTS_CSP",
    "INTERRUPTED_PREFIX",
    "MAX_EXEMPLARS",
    "PAGE_CSP",
    "PLAN_RESAMPLES",
    "SCRIPT_PAGE_CSP",
    "SEQUENCE_FILE",
    "SEQUENCE_PAGE",
    "ArcPage",
    "ArcSession",
    "Card",
    "ChatbotPlan",
    "ConversationPage",
    "Exit",
    "GateLook",
    "GatePair",
    "GateRecord",
    "GateRow",
    "GateSettings",
    "GateVerdict",
    "HumanAgreementReport",
    "ImportSummary",
    "Improvements",
    "ImprovementsFormat",
    "JudgeConsensusReport",
    "Pooled",
    "RatingsFile",
    "RowSummary",
    "RunComparison",
    "RunStatus",
    "Table",
    "UserCheckAgreement",
    "agreement_against_text",
    "agreement_humans_text",
    "agreement_report",
    "build_improvements",
    "by_column_text",
    "card_strings",
    "chatbot_markdown",
    "compare_runs",
    "compare_tables",
    "comparison_plots",
    "confusion_csv_text",
    "confusion_tables",
    "exemplar_conversations",
    "export_calls",
    "export_humans",
    "export_reference",
    "export_run",
    "exported_call",
    "failed_units",
    "failed_words",
    "few_personas_note",
    "fit",
    "fixed",
    "gate",
    "gate_text",
    "gate_verdict",
    "headline",
    "import_human_ratings",
    "left_out_line",
    "left_out_words",
    "no_bodies_reason",
    "num",
    "over_allowance",
    "page_name",
    "percent_level",
    "plan_ratings",
    "pool_scores",
    "pooled_text",
    "rating_anchor",
    "read_card",
    "read_conversation_page",
    "read_gate",
    "read_gate_file",
    "read_run",
    "read_sequence",
    "render",
    "render_arc_page",
    "render_card",
    "render_card_files",
    "render_compare_html",
    "render_conversation_page",
    "render_improvements",
    "render_improvements_html",
    "results_csv_ratings",
    "rich_table",
    "row_verdict_words",
    "run_improvements",
    "run_ratings",
    "run_status",
    "score_run",
    "sequence_page",
    "sequence_plot",
    "sequential_failed_note",
    "sequential_note",
    "shown_rows",
    "slug",
    "spreadsheet_safe",
    "state_label",
    "state_words",
    "status_text",
    "stopped_words",
    "summarize_rows",
    "summary_words",
    "tally",
    "text_tables",
    "user_check_agreement",
    "user_check_agreement_table",
    "verdict_words",
    "why_stopped",
    "with_markdown_css",
    "write_card_html",
    "write_improvements",
]
