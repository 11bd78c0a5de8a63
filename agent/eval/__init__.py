"""The evaluation harness (``python -m agent.eval``): scripted conversations over
real photos, checked from pixels, summarised as the metrics in DESIGN.md's
"Numbers to beat". It drives sessions only through :class:`agent.service.Studio`.
"""

from agent.eval.metrics import TARGETS, summarize
from agent.eval.runner import EvalError, RunOptions, run_scenario, run_suite
from agent.eval.scenarios import Scenario, ScenarioError, load_scenarios, smoke_subset

__all__ = ["EvalError", "RunOptions", "Scenario", "ScenarioError", "TARGETS", "load_scenarios",
           "run_scenario", "run_suite", "smoke_subset", "summarize"]
