"""Property-based tests (Hypothesis): random values, mask specs, paths and argument types.

Thrown at the MCP tools through the SDK's real client (in process, one Studio on a real SQLite
file) and at ``python -m pipeline.apply`` (its ``main``). Whatever arrives:

- never a crash: every MCP answer is the canonical ``{ok, tool, data | errors}``; ``pipeline.apply``
  exits 0 or 2;
- always a clear error: a failure is one or more one-line reasons, no traceback;
- nothing changed by a failure: no session, version, turn or file appears or changes (the MCP side),
  the input photo is never touched and no output is left behind (``pipeline.apply``);
- and whatever succeeds stays inside the rules: no file outside the allowed root is ever read into a
  session or written.
"""

from __future__ import annotations

import contextlib
import io
import os
import uuid
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp import Client

from agent.interfaces.mcp import build_server
from agent.service import Studio
from conftest import ScriptedJudge, ScriptedPlanner, small_photo
from pipeline import ops
from pipeline.imageio import load_image, save_image
from pipeline.masks import MASK_TYPES
from test_mcp import roots_of

#: Each tool and the arguments it takes (the fuzzer mostly sends these, sometimes others).
TOOL_PARAMS = {
    "open_photo": ["path", "style", "review_mode"], "edit": ["session_id", "message"],
    "review": ["session_id", "action", "values", "target", "feedback"], "history": ["session_id"],
    "export": ["session_id", "format", "path", "long_side", "overwrite"], "list_skills": [],
    "apply_skill": ["session_id", "skill"], "get_defaults": [], "set_defaults": ["image", "persist"],
    "generate_image": ["prompt", "seed", "width", "height", "steps"], "regenerate": ["asset_id", "seed", "param_overrides"],
}
TOOLS = list(TOOL_PARAMS)
SETTINGS = settings(deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10 ** 12), 10 ** 12), st.sampled_from([0, 1, -1, 100, 101, 2 ** 63]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["", " ", "\x00", "../..", "∞", "approve", "modify", "rollback", "replan", "jpeg", "png",
                     "always", "never", "film", "exposure", "saturation", "warmer", "undo"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                           max_leaves=12)

_fields = st.sampled_from(["low", "high", "softness", "hue", "hue_width", "min_saturation", "start", "end", "center",
                           "radius", "feather", "invert", "band", "name"])
_flat_masks = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(MASK_TYPES), st.text(max_size=8))},
    optional={"low": scalars, "high": scalars, "softness": scalars, "hue": scalars, "center": json_values,
              "radius": json_values, "start": json_values, "end": json_values, "feather": scalars,
              "invert": scalars, "band": scalars}).map(dict)
#: Mask specs: every type (and made-up ones), numbers in and out of range, nested invert/union/intersect.
mask_specs = st.recursive(
    st.one_of(_flat_masks, json_values, st.dictionaries(_fields, scalars, max_size=4)),
    lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("invert"), "mask": inner}),
        st.fixed_dictionaries({"type": st.sampled_from(["union", "intersect"]),
                               "masks": st.lists(inner, max_size=3)})),
    max_leaves=6)


# -- the MCP tools ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    """An in-process MCP client whose root is ``root/``; a Studio with one session; a folder outside."""
    base = tmp_path_factory.mktemp("props")
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    save_image(small_photo("astronaut", 96), root / "photo.png")
    save_image(small_photo("coffee", 96), outside / "secret.png")
    os.mkfifo(root / "pipe.png")
    (root / "link.png").symlink_to(outside / "secret.png")
    studio = Studio(database_url=f"sqlite:///{base / 'atelier.db'}", sessions_dir=base / "sessions",
                    planner=ScriptedPlanner(), judge=ScriptedJudge([0.95]))
    sid = studio.start_session(small_photo("rocket", 96), review_mode="always").id
    studio.send_message(sid, "temperature+20")          # a version waiting for review
    with pytest.MonkeyPatch.context() as mp:
        for name in ("ATELIER_MCP_ROOTS", "ATELIER_MCP_CLIENT_ROOTS", "ATELIER_MAX_UPLOAD"):
            mp.delenv(name, raising=False)
        with start_blocking_portal() as portal:
            client = Client(build_server(lambda: studio), list_roots_callback=roots_of(root))
            with portal.wrap_async_context_manager(client) as c:
                yield {"call": lambda name, args: portal.call(c.call_tool, name, args), "studio": studio,
                       "root": root, "outside": outside, "sid": sid, "base": base}
    studio.close()


def _files(*folders: Path) -> dict:
    out = {}
    for folder in folders:
        for p in folder.rglob("*"):
            if p.is_file() and not p.is_symlink():
                st_ = p.stat()
                out[str(p)] = (st_.st_size, st_.st_mtime_ns)
    return out


def _snapshot(t) -> tuple:
    studio = t["studio"]
    sessions = [(s.id, s.head_asset_id, s.turns) for s in studio.list_sessions()]
    versions = {s[0]: [(a.id, a.status) for a in studio.history(s[0])] for s in sessions}
    return sessions, versions, _files(t["root"], t["outside"])


def _paths(t) -> st.SearchStrategy:
    root, outside = t["root"], t["outside"]
    return st.one_of(
        st.sampled_from([str(root / "photo.png"), str(outside / "secret.png"), str(root / "pipe.png"),
                         str(root / "link.png"), str(root / ".." / "outside" / "secret.png"), "/dev/zero",
                         "/etc/passwd", str(t["base"] / "atelier.db"), str(t["base"] / "sessions"), str(root),
                         str(root / "new.png"), str(outside / "new.png"), str(root / "nope" / "x.png"), "~", "/",
                         "x" * 5000, str(root / "a\x00b.png")]),
        st.builds(lambda u, ext: str(root / f"{u.hex}{ext}"), st.uuids(), st.sampled_from([".png", ".jpg", ""])),
        st.text(max_size=40))


def _values_for(t, param: str) -> st.SearchStrategy:
    """Plausible values for ``param`` most of the time, anything (mask specs, JSON) the rest."""
    plausible = {
        "session_id": st.just(t["sid"]), "path": _paths(t), "message": st.sampled_from(
            ["make it warmer", "exposure+10", "undo", "more contrast on the sky", "saturation=-30", "?", ""]),
        "action": st.sampled_from(["approve", "modify", "rollback", "replan", "delete"]),
        "values": st.dictionaries(st.sampled_from(["exposure", "saturation", "clarity", "nope"]), scalars, max_size=3),
        "target": st.one_of(st.integers(-2, 5), st.just("0"), mask_specs), "format": st.sampled_from(["jpeg", "png",
                                                                                                         "tiff", "gif"]),
        "long_side": st.integers(-10, 5000), "overwrite": st.booleans(), "skill": st.sampled_from(["film", "moody", "x"]),
        "style": st.sampled_from(["film", "moody", "nope"]),
        "review_mode": st.sampled_from(["always", "never", "below_auto_approve", "sometimes"]),
    }.get(param, json_values)
    return st.one_of(plausible, plausible, plausible, mask_specs, json_values)


def _call(t) -> st.SearchStrategy:
    """(tool, arguments): mostly real tools with their own arguments, sometimes unknown tools and keys."""
    def for_tool(name: str) -> st.SearchStrategy:
        known = {p: _values_for(t, p) for p in TOOL_PARAMS.get(name, [])}
        extra = st.dictionaries(st.text(max_size=10), json_values, max_size=2)
        args = st.one_of(st.fixed_dictionaries(known), st.fixed_dictionaries({}, optional=known)) if known \
            else st.just({})
        return st.tuples(st.just(name), st.one_of(args, args, st.builds(lambda a, b: {**b, **a}, args, extra)))
    unknown = st.tuples(st.text(max_size=12), st.dictionaries(st.text(max_size=8), json_values, max_size=3))
    return st.one_of(*[for_tool(n) for n in TOOLS], unknown)


def _check_answer(name: str, result) -> dict:
    data = result.structured_content
    assert isinstance(data, dict) and set(data) in ({"ok", "tool", "data"}, {"ok", "tool", "errors"}), data
    assert data["tool"] == name and data["ok"] is not result.is_error
    if not data["ok"]:
        assert data["errors"] and all(isinstance(e, str) and e.strip() for e in data["errors"]), data
        assert all("\n" not in e and "Traceback" not in e and len(e) <= 500 for e in data["errors"]), data
    return data


@settings(SETTINGS, max_examples=200)
@given(data=st.data())
def test_random_calls_to_the_mcp_tools_fail_clearly_and_change_nothing(tools, data):
    name, args = data.draw(_call(tools), label="call")
    before = _snapshot(tools)
    answer = _check_answer(name, tools["call"](name, args))
    event(f"{name if name in TOOLS else 'unknown tool'}: {'ok' if answer['ok'] else 'refused'}")
    after = _snapshot(tools)
    if not answer["ok"]:
        assert after == before, (name, args, answer)
        return
    root = tools["root"].resolve()
    if name == "open_photo":     # whatever opened was inside the root, never the secret outside
        assert Path(os.path.realpath(str(args.get("path")))).is_relative_to(root), args
    new_files = set(after[2]) - set(before[2])
    assert all(Path(f).resolve().is_relative_to(root) for f in new_files), new_files
    assert {f: v for f, v in after[2].items() if f.startswith(str(tools["outside"]))} == \
           {f: v for f, v in before[2].items() if f.startswith(str(tools["outside"]))}


@SETTINGS
@given(path=st.data(), overwrite=st.one_of(st.booleans(), scalars))
def test_open_and_export_never_reach_outside_the_root(tools, path, overwrite):
    target = path.draw(_paths(tools), label="path")
    secret = (tools["outside"] / "secret.png").read_bytes()
    before = _snapshot(tools)
    opened = _check_answer("open_photo", tools["call"]("open_photo", {"path": target}))
    exported = _check_answer("export", tools["call"]("export", {"session_id": tools["sid"], "path": target,
                                                               "overwrite": overwrite, "long_side": 32}))
    event(f"open_photo {'ok' if opened['ok'] else 'refused'}, export {'ok' if exported['ok'] else 'refused'}")
    real = Path(os.path.realpath(target)) if "\x00" not in target else None
    inside = real is not None and real.is_relative_to(tools["root"].resolve())
    assert not opened["ok"] or (inside and real.is_file())
    assert not exported["ok"] or Path(exported["data"]["path"]).is_relative_to(tools["root"].resolve())
    assert (tools["outside"] / "secret.png").read_bytes() == secret
    assert sorted(p.name for p in tools["outside"].iterdir()) == ["secret.png"]
    if not opened["ok"] and not exported["ok"]:
        assert _snapshot(tools) == before


# -- python -m pipeline.apply ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def apply_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("apply")
    photo = folder / "in.png"
    save_image(small_photo("astronaut", 64), photo)
    (folder / "out").mkdir()
    return photo, folder / "out"


set_items = st.one_of(
    st.builds(lambda op, value: f"{op}={value}", st.sampled_from(["exposure", "contrast", "saturation", "clarity",
                                                                   "temperature", "dehaze"]), st.integers(-100, 100)),
    st.builds(lambda op, value: f"{op}={value}",
              st.one_of(st.sampled_from(sorted(ops.OPS)), st.text(max_size=10)),
              st.one_of(st.integers(-1000, 1000), st.floats(allow_nan=True, allow_infinity=True),
                        st.text(max_size=12), st.sampled_from(["4:5", "auto", "0,0,1,1", "0:0,255:255", "1,2"]))),
    st.text(max_size=20))
states = st.one_of(
    st.fixed_dictionaries({}, optional={
        "settings": st.one_of(st.dictionaries(st.one_of(st.sampled_from(sorted(ops.OPS)), st.text(max_size=8)),
                                              scalars, max_size=4), json_values),
        "layers": st.one_of(st.lists(st.fixed_dictionaries(
            {"mask": mask_specs},
            optional={"settings": st.dictionaries(st.sampled_from(["exposure", "saturation", "clarity", "nope"]),
                                                  scalars, max_size=3),
                      "opacity": scalars, "feather": scalars, "name": scalars}), max_size=3), json_values),
        "version": scalars}),
    json_values)


@SETTINGS
@given(sets=st.lists(set_items, max_size=4), state=st.one_of(st.none(), states),
       long_side=st.one_of(st.none(), st.integers(-5, 300)),
       suffix=st.sampled_from([".png", ".jpg", ".tif", ".webp", ".txt", "", ".PNG"]))
def test_random_edits_to_pipeline_apply_fail_clearly_and_touch_nothing(apply_files, sets, state, long_side, suffix):
    import json

    from pipeline.apply import main

    photo, out_dir = apply_files
    original = photo.read_bytes()
    out = out_dir / f"{uuid.uuid4().hex}{suffix}"
    argv = [str(photo), str(out)] + [a for s in sets for a in ("--set", s)]
    if state is not None:
        state_file = out_dir.parent / f"{uuid.uuid4().hex}.json"
        state_file.write_text(json.dumps(state, allow_nan=True))
        argv += ["--state", str(state_file)]
    if long_side is not None:
        argv += ["--long-side", str(long_side)]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:      # argparse's own refusal: also exit status 2 with a usage line
            code = exc.code
    assert code in (0, 2), (argv, err.getvalue())
    event(f"pipeline.apply exit {code}")
    assert photo.read_bytes() == original
    if code == 2:
        said = err.getvalue()
        assert ("error" in said or "skipped" in said) and "Traceback" not in said, said
        assert not out.exists()
    else:
        assert load_image(out.read_bytes()).width > 0
        out.unlink()
