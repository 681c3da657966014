"""What a run shows: the summary, report.md, the plots, the HTML pages and their templates,
the comparison text and page."""

from hy_eval.harness.report._compare_page import write_compare_page
from hy_eval.harness.report._compare_text import comparison_text
from hy_eval.harness.report._folder import report_folder
from hy_eval.harness.report._pages import metric_row, script_json
from hy_eval.harness.report._perturbed import add_perturbations, terminal_lines
from hy_eval.harness.report._plots import PLOTS, draw, figure
from hy_eval.harness.report._ruletitles import RULE_TITLES
from hy_eval.harness.report._write import markdown_report, terminal_summary, write_reports

__all__ = [
    "PLOTS",
    "RULE_TITLES",
    "add_perturbations",
    "comparison_text",
    "draw",
    "figure",
    "markdown_report",
    "metric_row",
    "report_folder",
    "script_json",
    "terminal_lines",
    "terminal_summary",
    "write_compare_page",
    "write_reports",
]
