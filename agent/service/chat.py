"""What the Studio does with a routed message that is not an edit request (agent/conversation/router.py).

- commands that move the head (undo, redo, back N steps, back to before a named
  change, back to the original) go through :meth:`Studio.undo` / :meth:`Studio.redo`:
  bit-exact rollbacks, a turn each, one-line reply;
- "reset the saturation" is a turn with the person's values (the op back to 0);
- export, show the original, what did you change, questions and small talk change
  nothing and use no turn: ``status="answered"``, ``turn`` = the last finished turn;
  the words and the answer are kept in the chat log all the same (``History.note``),
  so the studio shows them after its refresh and after a reload.

Only called by :meth:`agent.service.Studio.send_message`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agent.conversation.dialogue import dialogue_state
from agent.conversation.answers import (answer_doubt, evaluation_reply, photo_points, read_photo, recipe_text,
                                        weigh_change)
from agent.errors import InvalidInput
from agent.conversation.router import Route
from agent.conversation.vocabulary import read_pieces
from agent.conversation.words import find_phrases, phrase_list, plain_words, tokenize
from pipeline import ops
from pipeline.masks import normalize_mask_spec
from pipeline.measure import image_stats
from pipeline.state import EditState

import agent.service.labels as labels
from agent.service.records import TurnResult

if TYPE_CHECKING:
    from agent.service.studio import Studio

_FORMAT_NAMES = {"jpeg": "JPEG", "png": "PNG", "tiff": "TIFF", "webp": "WebP"}


def _answered(studio: "Studio", session_id: str, text: str, reply: str, *, kind: str, quick_replies=(),
              shown: str | None = None, export_path: str | None = None, said: str | None = None,
              offer: list[str] = ()) -> TurnResult:
    """An answer to ``text`` that uses no turn; both are kept in the chat log (``said``: how the log words
    the answer when ``reply`` carries a server path; ``offer``: the edits it proposed, which "yes, do that"
    next accepts)."""
    studio.versions.note(session_id, [{"role": "user", "content": text},
                                      {"role": "assistant", "content": reply if said is None else said,
                                       "offer": list(offer)}])
    session = studio.store.get_session(session_id)
    head = session.head_asset_id
    return TurnResult(session_id=session_id, turn=studio.store.last_turn(session_id), status="answered",
                      reply=reply, head_asset_id=head, rendered_path=shown or studio.renders.proxy_path(session_id, head),
                      kind=kind, quick_replies=list(quick_replies)[:3], export_path=export_path)


def handle(studio: "Studio", session_id: str, route: Route, text: str, progress=None) -> TurnResult | None:
    """Act on ``route`` for the session (the caller holds no lock; the Studio methods take it); None when
    the message turned out to be an edit for the planner after all."""
    session = studio.leases.session(session_id)
    if route.kind == "chat":
        return _answered(studio, session_id, text, route.reply or "OK.", kind="chat", quick_replies=route.quick_replies)
    if route.kind in ("evaluation", "exploration"):
        return _question(studio, session_id, route, text)
    name = route.name
    if name == "export":
        path = studio.export(session_id, fmt=route.fmt or "jpeg")
        label = _FORMAT_NAMES.get(route.fmt or "jpeg", str(route.fmt).upper())
        head = studio.head(session_id)
        what = labels.version_name(head.version or None)
        return _answered(studio, session_id, text, f"Exported {what} as a full-size {label}: {path}",
                         kind="command", export_path=str(path),
                         said=f"Exported {what} as a full-size {label}; it is ready to download.")
    if name == "show_original":
        return _answered(studio, session_id, text, "Here is the original. Say \u201cback to the original\u201d to return to it.",
                         kind="command", shown=str(studio.original_path(session_id)),
                         quick_replies=["Back to the original"])
    if name == "what_changed":
        state = EditState.from_dict(studio.head(session_id).state)
        recipe = recipe_text(state)
        edits = dialogue_state(studio.store, session_id).edits
        said = [", ".join(e.labels[:2]) or e.message for e in edits][-4:]
        if not recipe:
            return _answered(studio, session_id, text, "Nothing yet: this is the original photo.", kind="command")
        steps = f" ({len(edits)} change{'s' if len(edits) != 1 else ''}: {'; '.join(said)})" if edits else ""
        return _answered(studio, session_id, text, f"Now: {recipe}{steps}.", kind="command")
    if studio.pending_review(session_id) is not None:
        if name == "undo":   # "undo" during review: drop the version under review, keep the one before it
            result = studio.review(session_id, "rollback", target=session.head_asset_id, progress=progress,
                                   said=text)
            result.kind = "command"
            return result
        # anything else: keep talking, as with an edit request (the version under review is kept first)
        with studio.leases.leased(session_id):
            current = studio.leases.session(session_id)
            if studio.turns.pending(current) is not None:
                studio.turns.keep_pending(current)
    try:
        if name == "undo":
            state = dialogue_state(studio.store, session_id)
            if state.unmet and state.edits and _nothing_said_since_last_turn(studio, session_id):
                # "make the cup brighter" -> "I can't find the cup" -> "ok undo": the last message changed
                # nothing, so nothing of it is taken back; an earlier change goes only when asked again
                last = ", ".join(state.edits[-1].labels[:2]) or "the last change"
                return _answered(studio, session_id, text,
                                 f"Your last message changed nothing (I couldn't find {state.unmet_place or 'that'}), "
                                 f"so there is nothing of it to undo. Say \u201cundo\u201d again to take back "
                                 f"\u201c{last}\u201d.", kind="command", quick_replies=["Undo"])
            if find_phrases(plain_words(tokenize(text)), phrase_list("withdrawals")) and _last_reply_changed_nothing(studio, session_id):
                # "can u do the thing u did on my last photo" -> (asked what) -> "never mind lol": the request
                # is withdrawn; the change before it stays
                return _answered(studio, session_id, text, "OK, I'll leave the photo as it is. Tell me whenever "
                                 "you'd like to change something.", kind="chat", quick_replies=["Undo"])
            return studio.undo(session_id, progress=progress, said=text)
        if name == "redo":
            return studio.redo(session_id, progress=progress, said=text)
        if name == "back":
            return studio.undo(session_id, steps=route.steps, progress=progress, said=text)
        if name == "original":
            edits = dialogue_state(studio.store, session_id).edits
            if not edits:
                return _answered(studio, session_id, text, "This is already the original photo.", kind="command")
            return studio.undo(session_id, steps=len(edits), progress=progress, said=text)
    except InvalidInput as exc:
        if name == "redo" and find_phrases(tokenize(text), studio.router.redo_else_undo) \
                and dialogue_state(studio.store, session_id).edits:
            # "now its all muddy grey, put it back" with nothing undone: the photo as it was before that change
            return studio.undo(session_id, progress=progress, said=text)
        return _answered(studio, session_id, text, str(exc)[:1].upper() + str(exc)[1:] + ".", kind="command")
    if name == "going_back":
        return _going_back(studio, session_id, route, progress, text)
    if name == "reset":
        return _reset(studio, session_id, route, text, progress)
    if name == "use_schema":
        return _use_schema(studio, session_id, route, text)
    return _answered(studio, session_id, text, "I'm not sure what to do with that.", kind="command")


def repeated_command(studio: "Studio", session_id: str) -> Route | None:
    """The undo or redo the session's last turn was, as a route to do once more ("and again" right after
    "ctrl+z"); None when the last turn was anything else or something was said since."""
    turns = studio.store.turns(session_id)
    if not turns or turns[-1].outcome != "rolled_back" or not _nothing_said_since_last_turn(studio, session_id):
        return None
    done = str((turns[-1].action or {}).get("summary") or "").split(" ", 1)[0]
    return Route("command", done) if done in ("undo", "redo") else None


def taken_out_last(studio: "Studio", session_id: str) -> bool:
    """Whether the change that made the current version only took qualities out (each op it moved set back
    to 0: "reset the contrast", "undo the warmth"), with nothing said since."""
    last = dialogue_state(studio.store, session_id).last
    return last is not None and bool(last.changes) and all(c.after == 0 and c.before != 0 for c in last.changes) \
        and _nothing_said_since_last_turn(studio, session_id)


def withdraws_last(studio: "Studio", session_id: str, text: str) -> bool:
    """Whether a going back ("never mind", "forget that") withdraws the last request, which changed nothing
    (I asked where, or could not do it), rather than taking back the change before it."""
    state = dialogue_state(studio.store, session_id)
    return bool(state.unmet and state.edits and _nothing_said_since_last_turn(studio, session_id)) or bool(
        find_phrases(plain_words(tokenize(text)), phrase_list("withdrawals"))
        and _last_reply_changed_nothing(studio, session_id))


def _last_reply_changed_nothing(studio: "Studio", session_id: str) -> bool:
    """Whether the last reply made no version: an answer that used no turn, or a turn that asked back, was not
    understood or failed."""
    log = studio.chat_log(session_id)
    turns = studio.store.turns(session_id)
    if not log or log[-1]["role"] != "assistant":
        return False
    if not turns or log[-1]["content"] != turns[-1].reply:
        return True         # answered without a turn (a question, a remark)
    return turns[-1].outcome in ("not_understood", "failed")


def _nothing_said_since_last_turn(studio: "Studio", session_id: str) -> bool:
    """Whether the chat log ends with the last turn's own reply (no answer or remark noted after it)."""
    log = studio.chat_log(session_id)
    turns = studio.store.turns(session_id)
    return bool(log and turns) and log[-1]["role"] == "assistant" and log[-1]["content"] == turns[-1].reply


def _question(studio: "Studio", session_id: str, route: Route, text: str) -> TurnResult:
    vocab = studio.router.vocab
    pe = studio.router.profile.vocabulary
    if route.name == "capabilities":
        return _answered(studio, session_id, text, f"I edit tone and colour by what you say. I can do: {vocab.capabilities()} "
                         "Say \u201cundo\u201d, \u201cmore\u201d or \u201ctoo much\u201d at any time.",
                         kind="question", quick_replies=studio.router.capabilities_replies)
    head = studio.head(session_id)
    state = EditState.from_dict(head.state)
    pixels = studio.render(session_id, head.id, long_side=studio.config.judge_long_side)
    stats = image_stats(pixels)
    rules = list(pe.get("photo_reading") or [])
    if route.kind == "exploration":
        named = _offered(vocab, route)
        if named:
            # "would it look better warmer?": the answer weighs that change, and "yes" makes it
            points = photo_points(stats, rules)
            reply = weigh_change(" and ".join(n.lower() for n in named), points,
                                 lambda toward: _same_change(vocab, route, toward))
            others = [p.suggest for p in points if p.suggest and p.suggest.lower() not in {n.lower() for n in named}]
            return _answered(studio, session_id, text, reply, kind="question",
                             quick_replies=list(dict.fromkeys(named + others)), offer=named)
        says, suggest = read_photo(stats, rules)
        suggest = suggest or [str(x) for x in pe.get("photo_reading_default_suggestions") or ()]
        why = f" ({'; '.join(says)})" if says else ""
        return _answered(studio, session_id, text, f"I would try: {', '.join(s.lower() for s in suggest[:3])}{why}.",
                         kind="question", quick_replies=suggest, offer=suggest[:3])
    doubted = _doubted(vocab, text)
    fix = None
    if doubted is not None:
        # "is it too dark?", "are the highlights clipped?": answered about that quality, from the measurements
        key, flipped = doubted
        fix = vocab.intents[key].opposite if flipped else key
        label = vocab.intents[fix].label if fix in vocab.intents else f"less {vocab.intents[key].label}"

        def agrees(toward: str) -> bool | None:
            same = _same_change(vocab, Route(route.kind, route.name, words=[key]), toward)
            return same if not flipped or same is None else not same
        answer = answer_doubt(label, photo_points(stats, rules), rules, agrees)
        if answer is not None:
            offered = [label[:1].upper() + label[1:]] if answer.startswith("Yes") and fix in vocab.intents else []
            return _answered(studio, session_id, text, answer, kind="question", quick_replies=offered,
                             offer=offered)
    reply, suggest = evaluation_reply(stats, rules, str(pe.get("photo_reading_good") or "It looks balanced."), state)
    if route.name == "reading" and studio.router.reading_reply:
        reply = f"{studio.router.reading_reply} {reply}"     # "can you read what time it says?": said plainly first
    named = _offered(vocab, route)
    if fix is not None and fix in vocab.intents and fix not in route.words:
        # ("is it too flat?": what "yes" makes is the fix, more contrast, never flatter)
        named = [vocab.intents[fix].label[:1].upper() + vocab.intents[fix].label[1:]]
    return _answered(studio, session_id, text, reply, kind="question", quick_replies=named + suggest,
                     offer=named or suggest[:1])


def _doubted(vocab, text: str) -> tuple[str, bool] | None:
    """The one quality a question doubts, and whether it is doubted as too much of it ("is it too dark?":
    darker, too much; "is it sharp enough?": sharper, not enough; "are the highlights clipped?": the fix that
    names, recover the highlights), or None when it names none or more than one."""
    pieces = read_pieces(vocab, tokenize(vocab.spell(text or "")))
    named = [p for p in pieces if p.category in ("intent", "fix", "problem")]
    if len(named) != 1:
        return None
    said = named[0]
    if said.category == "problem":      # "too dark": what fixes it
        fixes = vocab.problems[said.key].fixes if said.key in vocab.problems else ()
        return (fixes[0], False) if fixes and fixes[0] in vocab.intents else None
    if said.key not in vocab.intents:
        return None
    return said.key, said.category == "intent" and any(p.category == "reduce" and p.pos < said.pos for p in pieces)


def _same_change(vocab, asked: Route, toward: str) -> bool | None:
    """Whether the intent ``toward`` (a photo reading's suggestion) is the change ``asked`` named (True), its
    opposite (False) or something else (None), by the ops and their signs."""
    def ways(keys) -> set[tuple[str, bool]]:
        return {(op, value > 0) for k in keys if k in vocab.intents for op, value in vocab.intents[k].ops if value}
    mine, theirs = ways(asked.words), ways([toward])
    if mine & theirs:
        return True
    if {(op, not up) for op, up in mine} & theirs:
        return False
    return None


def _offered(vocab, route: Route) -> list[str]:
    """The edits a question named ("would it look better in black and white?"), offered as quick replies."""
    labels = [vocab.intents[k].label for k in route.words if k in vocab.intents]
    return [label[:1].upper() + label[1:] for label in dict.fromkeys(labels)]


def _going_back(studio: "Studio", session_id: str, route: Route, progress, text: str) -> TurnResult | None:
    """"scrap the purple", "back to the first warm version": the version found among the head path's edits,
    reached by undo (bit-exact). None when only a weak verb was said and no change matches ("remove the dust"
    is a retouch for the planner)."""
    state = dialogue_state(studio.store, session_id)
    reader = studio.router.going_back
    for back in route.going_back:
        steps = reader.find_version(back, state)
        if steps is not None:
            try:
                return studio.undo(session_id, steps=steps, progress=progress, said=text)
            except InvalidInput as exc:
                return _answered(studio, session_id, text, str(exc)[:1].upper() + str(exc)[1:] + ".", kind="command")
    for back in route.going_back:
        out = reader.taken_out(back, state)
        # (a change on a place is taken out only when going back is all the words can mean: "cut her out and
        # drop her onto a beach" names her, not the change made on her)
        # (the toning layer of a black-and-white version is no place: "drop the sepia" names the look)
        toning = studio.router.vocab.monochrome.get("toning_mask")
        toning = normalize_mask_spec(toning) if toning else None
        placed = any(c.target is not None and normalize_mask_spec(c.target) != toning for e in out for c in e.changes)
        # ... or when the words name a kind of change and no place ("take the sharpening out")
        taken = _take_out(studio, session_id, out, progress, text, later=out[-1] is not state.edits[-1]) \
            if out and (back.strong or not placed or reader.names_only_a_change(back.named)) else None
        if taken is not None:
            return taken
    if not any(back.strong for back in route.going_back):
        return None
    said = next((b.before or b.after or b.named for b in route.going_back if b.before or b.after or b.named), [])
    asked = next(filter(None, (reader.unmade(back, state) for back in route.going_back)), None)
    if asked is not None:
        # "undo the dial" when "brighten the dial" made nothing (no finder knows a dial): say so, not "no such change"
        return _answered(studio, session_id, text, f"Nothing to undo there: when you asked \u201c{_quoted(asked.message)}"
                         "\u201d I made no change, so the photo never had it.", kind="command",
                         quick_replies=["What did you change?", "Undo"])
    if said and state.edits and reader.names_nothing(said, state) and reader.asked_outright(text):
        # "noooo go back", "kindly reverse the last modification", "switch it back": the words left over name
        # no quality, place or colour and nothing said with any change, so they name no change: the last one
        return studio.undo(session_id, progress=progress, said=text)
    if said:
        return _answered(studio, session_id, text, f"I couldn't find a change like \u201c{' '.join(said)}\u201d in "
                         "this version's history, so nothing changed.", kind="command",
                         quick_replies=["What did you change?", "Undo"])
    if not state.edits:
        return _answered(studio, session_id, text, "This is already the original photo; nothing to go back to.",
                         kind="command")
    return _answered(studio, session_id, text, "I couldn't tell which version you mean, so nothing changed. "
                     "Say \u201cundo\u201d for the last change, or pick a version in the history.",
                     kind="clarify", quick_replies=["Undo", "What did you change?", "Back to the original"])


def _quoted(message: str, limit: int = 60) -> str:
    """An earlier message, said back in a reply: one line of printable characters, at most ``limit`` of them."""
    line = " ".join("".join(ch for ch in message if ch.isprintable() or ch.isspace()).split())
    return line if len(line) <= limit else line[:limit - 1].rstrip() + "\u2026"


def _take_out(studio: "Studio", session_id: str, edits: list, progress, text: str,
              later: bool = True) -> TurnResult | None:
    """A change named that is not the last ("lose the warm stuff" after warming, then brightening; "undo the
    sky colour but keep the lights fix"): its steps taken out of the head's values, on the whole photo and on
    the places they went, as a new version; what came after it stays. None when a place it went is no longer
    a layer of the head (nothing to take its steps out of)."""
    state = EditState.from_dict(studio.head(session_id).state)
    steps: dict[tuple[str, str], list] = {}
    for e in edits:
        for c in e.changes:
            key = (json.dumps(c.target, sort_keys=True) if c.target else "", c.op)
            steps.setdefault(key, [c.target, 0])[1] += c.delta
    values: dict[str, Any] = {}
    layers: dict[str, dict] = {}
    for (where, op), (target, delta) in steps.items():
        if target and state.find_layer(target) is None:
            return None
        current = state.value(op, target or None)
        if not delta or not isinstance(current, (int, float)):
            continue
        if target:
            layers.setdefault(where, {"mask": target, "values": {}})["values"][op] = current - delta
        else:
            values[op] = current - delta
    result = _modified(studio, session_id, text, values, progress, list(layers.values()))
    labels = list(dict.fromkeys(label for e in edits for label in e.labels))
    what = ("the \u201c" + "\u201d and \u201c".join(labels) + "\u201d change" + ("s" if len(edits) > 1 else "")) \
        if labels else "that change"
    if result.asset_id:
        # (not "Set exposure on the sky to 0, as you asked": the values are the change taken out, not said)
        rest = (result.reply or "").split(", as you asked. ", 1)
        said = rest[1] if len(rest) == 2 and rest[0].startswith("Set ") else (result.reply or "")
        kept = "the later changes stay" if later else "the others stay"
        result.reply = f"Took out {what}; {kept}. " + said
    result.kind = "command"
    return result


_AGENT_LABELS = {"planner": "the planner", "quality": "the judge", "executor": "the executor"}


def _use_schema(studio: "Studio", session_id: str, route: Route, text: str) -> TurnResult:
    """"use my cinematographer schema": the longest existing schema name said, from the next turn on (no turn
    is used); a name that does not exist is answered with the ones that do."""
    agents = [route.agent] if route.agent else list(_AGENT_LABELS)
    said = " " + " ".join(route.words) + " "
    names = {n for a in agents for n in studio.list_schemas(a) if n != "default"}
    named = [n for n in sorted(names, key=len, reverse=True)
             if f" {n.lower()} " in said or f" {n.lower().replace('_', ' ')} " in said]
    if not named:
        have = ", ".join(sorted(names)) or "none besides the default"
        return _answered(studio, session_id, text, f"I couldn't find that schema, so nothing changed. "
                         f"Schemas for {' and '.join(_AGENT_LABELS[a] for a in agents)}: {have}.", kind="command")
    name = named[0]
    info = studio.use_schema(session_id, name, agent=route.agent)
    chosen = [a for a in _AGENT_LABELS if getattr(info, f"{a}_schema") == name]
    who = " and ".join(_AGENT_LABELS[a] for a in chosen)
    result = _answered(studio, session_id, text, f"From the next change on, {who} use{'s' if len(chosen) == 1 else ''} "
                       f"your {name} schema.", kind="command")
    result.details = {"schemas": {a: name for a in chosen}}
    return result


def _reset(studio: "Studio", session_id: str, route: Route, text: str, progress) -> TurnResult:
    vocab = studio.router.vocab
    state = EditState.from_dict(studio.head(session_id).state)
    names: list[str] = []
    for key in route.words:
        if key in vocab.intents:
            names += [op for op, _ in vocab.intents[key].ops]
        elif key in ops.OPS:
            names.append(key)
    values = {n: 0 for n in dict.fromkeys(names) if state.value(n)}
    # ("undo the sharpening" after "sharpen the text": the op is reset where it went, on the places too)
    layers = [{"mask": layer.mask, "values": {n: 0 for n in dict.fromkeys(names) if layer.settings.get(n)}}
              for layer in state.layers]
    layers = [layer for layer in layers if layer["values"]]
    if not values and not layers:
        label = ", ".join(dict.fromkeys(ops.get_op(n).label.lower() for n in names)) or "that"
        return _answered(studio, session_id, text, f"{label.capitalize()} is already at its neutral value; nothing to reset.",
                         kind="command")
    result = _modified(studio, session_id, text, values, progress, layers)
    result.kind = "command"
    return result


def _modified(studio: "Studio", session_id: str, text: str, values: dict, progress,
              layers: list | None = None) -> TurnResult:
    """A turn that sets op values as said (no plan): "reset the warmth", a change taken out (``layers``: values
    set on places, ``{"mask": spec, "values": {op: value}}``)."""
    with studio.leases.leased(session_id):
        return studio.turns.start(studio.leases.session(session_id), text, modify_values=values, progress=progress,
                                  modify_layers=layers or None)


__all__ = ["handle"]
