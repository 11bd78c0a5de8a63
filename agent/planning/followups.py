"""Follow-ups resolved against the dialogue state: "more", "too much", "halve it", "same for the sky".

A message is a follow-up when it names no quality, look, colour or op of its
own and every word in it is a follow-up phrase, a magnitude, a place or
filler (profile ``vocabulary.followups``). It then acts on the change
that made the current version (:meth:`agent.conversation.dialogue.DialogueState.base_edit`):

- repeat ("more", "again", "bit more"): the same moves again, times the
  phrase's scale or the magnitude word said;
- pull back ("less", "too much", "halve it", "way too much"): every op of that
  change moves back toward its value before the change by a fraction (set
  values, so never past it);
- retarget ("same for the sky", "the sky too"): the same moves on the place named;
- a negated look ("not that soft", "less dreamy") right after that look: the
  look's ops are pulled back (:func:`reduce_look_moves`, called by the grammar);
- a complaint about what the last change did ("now it's too yellow" after
  "warmer"): that change is pulled back (:func:`undo_cause_moves`, called by the grammar).

With no earlier change there is nothing to refer to: the planner asks.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from agent.planning.moves import Draft, Move, protect_moves, spec_key
from agent.conversation.vocabulary import FILLER, MAX_MESSAGE_CHARS, Intent, Piece, Problem, Vocabulary, read_pieces
from agent.conversation.clauses import (CAST_CAUSES, DETERMINERS, PERSONS, POINTING_BACK, WISH_OPENERS, and_a_place,
                                        named_places, split_clauses)
from agent.conversation.dialogue import DialogueState
from agent.conversation.going_back import mask_parts
from agent.conversation.words import (SEPARATORS, before_comparative, find_phrases, particle_follow_up, percent_share,
                                     says_vague_ask, tokenize,
                                     turned_round, word_lists)
from pipeline import ops
from pipeline.masks import MaskSpecError, normalize_mask_spec
from pipeline.state import EditState

#: Pieces that make a message a request of its own rather than a follow-up.
#: Sounds that open a message and say nothing (profiles/language/words.yaml).
INTERJECTIONS = word_lists()["interjections"]
_ANCHORS = ("intent", "fix", "problem", "op", "relative", "band", "towards", "objects", "reset", "set")
#: Pieces a follow-up may carry.
_CARRIED = ("magnitude", "increase", "reduce", "separator", "global", "target", "avoid", "rollback")


@dataclass
class FollowUp:
    """What a follow-up asks for: moves (or a question when there is nothing to refer to)."""

    moves: list[Move] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dialogue: dict = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    question: str = ""
    quick_replies: list[str] = field(default_factory=list)


def _what(base) -> str:
    if base.labels:
        return "\u201c" + ", ".join(base.labels[:3]) + "\u201d"
    return f"the last change (T{base.turn})"


def _own_changes(base) -> list:
    """The changes of ``base`` a follow-up works on: a change kept off a place ("but leave the sky alone")
    also set the whole-photo version of that change back, which is not what was asked."""
    undone = {tuple(u) for u in base.followup.get("undone") or ()} if base.followup.get("move") in ("kept_out", "confined") else ()
    return [c for c in base.changes if (c.op, spec_key(c.target)) not in undone]


def _nonzero(x: float) -> int:
    v = int(round(x))
    return v if v else int(math.copysign(1, x)) if x else 0


def pull_back_moves(base, state: EditState, fraction: float, order: int, *, only_ops=None,
                    only_targets=None, label: str = "", discrete=frozenset(), least=None, what: str = "") -> list[Move]:
    """Each op ``base`` changed moves back toward its value before ``base`` by ``fraction`` (0..1], and by
    at least ``least[op]`` units (a step that shows), never past that earlier value.

    Ops in ``discrete`` (a rotation, an aspect ratio) are choices, not amounts: left as they are.
    """
    out, whole = [], []
    # (a replan that strengthens a pull-back may ask more than all of it: never past where it started, so
    # never said as more than all of it)
    fraction = min(1.0, max(0.0, fraction))
    pct = "all" if fraction >= 0.995 else f"{fraction:.0%}"
    what = what or _what(base)
    for rank, c in enumerate(_own_changes(base)):
        if (only_ops is not None and c.op not in only_ops) or c.op in discrete:
            continue
        # (the place named, or that place with another kept out: "the sky, all but the bottom" is on the sky)
        if only_targets is not None and not (
                _on_place(c.target, only_targets) if c.target else (None in only_targets)):
            continue
        now = state.value(c.op, c.target) if c.target else state.value(c.op)
        if now == c.before:
            continue
        goal = now - fraction * (now - c.before)
        value = int(round(goal))
        step = max(1, (least or {}).get(c.op, 1))        # a visible step back
        if abs(now - value) < step:
            value = now - int(math.copysign(step, now - c.before))
        # never past the earlier value
        value = max(value, c.before) if now > c.before else min(value, c.before)
        out.append(Move(c.op, value, "set", c.target, label or f"less of {what}",
                        f"taking back {pct} of {what}", "followup", order, rank, "followup"))
        whole.append(value == c.before)
    if out and all(whole) and fraction < 0.95:
        # the least visible step took all of a small change back: the reply says so, not the share asked
        for m in out:
            m.phrase = f"taking back all of {what} (a smaller step would not show)"
    return out


def reduce_look_moves(vocab: Vocabulary, dialogue, intent: Intent, scale: float, state: EditState, order: int,
                      draft: Draft) -> list[Move]:
    """"not that soft" / "less dreamy" when the last change applied that look: pull it back."""
    base = dialogue.base_edit() if dialogue is not None else None
    if base is None:
        return []
    signs = {op: (1 if v > 0 else -1) for op, v in intent.ops}
    if intent.name in base.intents and len(base.intents) == 1:
        only = None                                    # the whole look
    elif intent.name in base.intents:
        # "less warm" after "brighter and warmer": only the warmth goes back, the brightness stays
        only = {op for op, _ in intent.ops if base.touches(op)}
    else:
        only = {op for op, s in signs.items() if base.touches(op, s)}
        if not only:
            return []
    return _pull_back_base(vocab, base, only, scale, state, order, draft, f"less {intent.label}")


def undo_cause_moves(vocab: Vocabulary, dialogue, problem: Problem, fix: Intent, scale: float, state: EditState,
                     order: int, draft: Draft) -> list[Move]:
    """"hmm now it's too yellow" after "warmer", "don't make it so blue" after "more blue": a complaint about
    what the last change did (it was the fix's opposite, or strengthened the colour complained of) pulls
    that change back, never past where it started, instead of a fresh opposite move; so does a colour cast
    a look put in ("too orange now" after a cosy look). A complaint about a tone a look only touched on ("bit
    dark now" after a moody look) gets its fix."""
    base = dialogue.base_edit() if dialogue is not None else None
    if base is None:
        return []
    caused = {(op, -1 if v > 0 else 1) for op, v in fix.ops
              if fix.opposite in base.intents or op in _CAST_OPS}
    band_saturation = vocab.band_ops.get("saturation")
    if problem.band and band_saturation:
        caused.add((band_saturation.format(band=problem.band), 1))
    only = {op for op, sign in caused if base.touches(op, sign)}
    if not only:
        return []
    return _pull_back_base(vocab, base, only, scale, state, order, draft, f"less {problem.name}")


#: The white-balance ops: a colour complained of right after a look that pushed it ("too orange now" after a cosy
#: look) is that look's doing, pulled back like the plain opposite ("warmer").
_CAST_OPS = frozenset(op for op, _ in CAST_CAUSES)


def _pull_back_base(vocab: Vocabulary, base, only: set[str] | None, scale: float, state: EditState, order: int,
                    draft: Draft, label: str) -> list[Move]:
    """``only`` ops of ``base`` (all: None) pulled back by the profile's fraction times ``scale``."""
    low, high = vocab.pull_back_limits
    fraction = min(high, max(low, vocab.pull_back_fraction * scale))
    moves = pull_back_moves(base, state, fraction, order, only_ops=only, label=label, discrete=vocab.discrete_ops,
                            least=vocab.pull_back_least)
    if moves:
        draft.followup = {"move": "reduce_look", "base_asset": base.asset_id, "fraction": round(fraction, 2)}
    return moves


def _likeness(tokens: list[str], phrases: list[tuple[int, int, object]]) -> set[int]:
    """The positions of a likeness ("like outer space") up to the next separator or follow-up phrase."""
    said = {i for pos, n, _ in phrases for i in range(pos, pos + n)}
    out: set[int] = set()
    for i, t in enumerate(tokens):
        if t in word_lists()["likeness_starts"] and i not in said:
            end = next((k for k in range(i + 1, len(tokens)) if tokens[k] in SEPARATORS or k in said), len(tokens))
            out.update(range(i, end))
    return out


def _toward_colours(vocab: Vocabulary, tokens: list[str], base) -> set[str]:
    """The ops of the last change that moved the photo toward a colour named ("less blue", "less brown"): a
    white balance op the other way from that colour's cast fix, and that colour's own saturation raised."""
    bands = {vocab.colour_words.get(t.removesuffix("ish")) for t in tokens} - {None}
    cast = {vocab.band_casts[b] for b in bands if b in vocab.band_casts}
    saturation = vocab.band_ops.get("saturation")
    own = {saturation.format(band=b) for b in bands} if saturation else set()
    return {c.op for c in base.changes
            if any(c.op == op and (c.after - c.before) * fix < 0 for op, fix in cast)
            or (c.op in own | _MORE_COLOUR and c.after > c.before)}


#: A person said by a pronoun ("he looks like ..."): no place of its own in how the photo looks now.
_PRONOUNS = frozenset({"he", "she", "him", "her", "they", "them", "his", "hers"})

#: Ops that, raised, make every colour stronger (so "too pink now" after "more saturated" takes them back).
_MORE_COLOUR = frozenset({"saturation", "vibrance"})


def read_followup(vocab: Vocabulary, message: str, request) -> FollowUp | None:
    """The follow-up ``message`` asks for, or None when it is a request of its own."""
    tokens = tokenize((message or "")[:MAX_MESSAGE_CHARS])
    if not tokens:
        return None
    pieces = read_pieces(vocab, tokens)
    particle = particle_follow_up(tokens)
    # (the verb may name a framing choice the tables know, "reel it in" is no reel to crop for; a quality said as
    # the verb is a request of its own, "cool it down a little")
    if particle is not None and not any(p.category in _ANCHORS and not (
            particle[0] <= p.pos < particle[0] + particle[1] and p.category == "intent" and p.key in vocab.intents
            and all(op in vocab.discrete_ops for op, _ in vocab.intents[p.key].ops)) for p in pieces):
        # "pump it up", "dial it down a notch": more or less of the last change, said with any verb
        at, n, way = particle
        tokens = tokens[:at] + (["more"] if way > 0 else ["less"]) + tokens[at + n:]
        pieces = read_pieces(vocab, tokens)
    tokens, pieces = _done_again(vocab, tokens, pieces)
    pull = before_comparative(tokens, find_phrases(tokens, vocab.pull_back))
    # "less on the coat", "a bit less for the sky": less of the last change on a place, not less of a quality
    pull += [(i, 1, 1.0) for i, t in enumerate(tokens) if t == "less" and i + 1 < len(tokens)
             and tokens[i + 1] in ("on", "for") and not any(s <= i < s + n for s, n, _ in pull)]
    # ("lighten the top half": a half that names a part of the frame is no share of the last change)
    in_places = {i for p in pieces if p.category == "target" for i in range(p.pos, p.pos + len(p.text.split()))}
    fractions = [f for f in find_phrases(tokens, vocab.fractions) if not in_places & set(range(f[0], f[0] + f[1]))]
    # "too much, it's like outer space now", "it looks like a sunset, dial it back": a likeness said with a
    # pull-back is why, not what to do (nor a look asked for)
    likeness = _likeness(tokens, pull + fractions) if pull or fractions else set()
    anchors = [p for p in pieces if p.category in _ANCHORS and p.pos not in likeness]
    # "whoa crunchy. halve that": a complaint about the last change, said with a share to take back, is
    # the reason for taking it back ("too dark now, halve it" after a warming is a request of its own)
    dialogue = getattr(request, "dialogue", None)
    # ("bit too blue now, back it off", "that's gone foggy, dial it back": a pull-back verb always means the
    # last change; a share alone only when the complaint is one that change caused)
    last = dialogue.base_edit() if dialogue is not None else None
    # not "halve it"; "go halfway back on that last one" says back
    # ("bit much, he looks grey now. halve it": an overshoot said is a pull-back, whatever share it takes)
    verbs = [p for p in pull if not any(f[0] <= p[0] < f[0] + f[1] for f in fractions)
             or _OVERSHOOT & set(tokens[p[0]:p[0] + p[1]])]

    # ("way too much", "went too far", "back it off": an overshoot said, not "a bit less bright")
    overshot = any(_OVERSHOOT & set(tokens[s:s + n]) for s, n, _ in verbs)

    def named_part(p) -> bool:      # "back off the sharpening": the last change's own quality, named as a thing
        return p.category == "intent" and last is not None and p.key in last.intents and p.pos > 0 \
            and tokens[p.pos - 1] in DETERMINERS
    said_why = bool(fractions or pull) and bool(anchors) and (
        all(p.category == "problem" for p in anchors) and all(_undoes_last(vocab, p.key, dialogue) for p in anchors)
        # "the wood looks weirdly cold now, maybe split the difference" after cooling: the last change's
        # own quality, said of how the photo is now
        or last is not None and all(p.category == "intent" and p.key in last.intents and _stated(tokens, p)
                                    for p in anchors)
        # "not that much, the texture in the snow is going": every quality said is in a clause that says how
        # the photo is now, so the pull-back has its reason (a colour or a complaint said so has its own fix:
        # "the pink nose is a bit too pink, tone it down")
        or bool(pull) and last is not None and all(p.category == "intent" and _in_statement(tokens, p.pos) and not any(
            s <= p.pos < s + n for s, n, _ in pull) for p in anchors)
        or bool(verbs) and last is not None
        and all(p.category == "problem" or p.category == "intent" and (_stated(tokens, p) or named_part(p)
                                                                         # "way too much, its all grey and flat now"
                                                                         or _in_statement(tokens, p.pos) and overshot)
                # "didnt realise how green itd get ... pull it back" after more vivid greens: that colour
                or p.category == "band" and _moved_band(last, p.key)
                for p in anchors))
    # "too much, i only wanted it a bit brighter" after "much brighter": the quality the last change asked,
    # said with a pull-back and how much was meant, is that change scaled back to that much
    said_how = bool(pull) and not fractions and bool(anchors) and not said_why and last is not None \
        and all(p.category == "intent" and p.key in last.intents for p in anchors) \
        and not any(p.category == "reduce" and not any(s <= p.pos < s + n for s, n, _ in pull) for p in pieces) \
        and not any(s + n == a.pos or s + n == a.pos - 1 and not named_part(a)        # "less warm": a negation
                    for s, n, _ in pull for a in anchors)
    if said_how:
        return _scaled_back(vocab, last, anchors, pieces, request.state)
    amount = _amount_for_last(tokens, pieces) if last is not None and not anchors and not pull and not fractions else None
    if amount is not None:
        signed = any(p.category == "number" and p.text[:1] in "+-" for p in pieces)
        resized = _resized(vocab, last, amount, signed, request.state)
        if resized is not None:
            return resized
    way = turned_round(tokens, vocab.reverse) if last is not None and not anchors else None
    if way is not None:
        turned = _turned(vocab, last, way)
        if turned is not None:
            return turned
    # "i meant only a little" right after "make it warmer": that change, to the amount said
    meant = any(t in ("mean", "meant") and i > 0 and tokens[i - 1] == "i" for i, t in enumerate(tokens))
    if meant and last is not None and last.intents and any(p.category == "magnitude" for p in pieces) \
            and all(vocab.magnitudes[p.key] < 1.0 for p in pieces if p.category == "magnitude") \
            and all(p.category in ("magnitude", "word", "separator") for p in pieces) \
            and all(p.text in FILLER or p.text in ("i", "mean", "meant", "only", "just", "no", "sorry", "oh", "oops")
                    for p in pieces if p.category == "word"):
        return _scaled_back(vocab, last, [Piece("intent", last.intents[0], "", 0)], pieces, request.state)
    if last is not None and not (pull or fractions or find_phrases(tokens, vocab.repeat)):
        kept = _kept_out(vocab, tokens, pieces, last, request.state)
        if kept is not None:
            return kept
    if pull and not fractions and _less_again(vocab, tokens, pieces, last):
        pull = []        # "even less", "bit less still" after "make the mat less neon": that change again
        carried = True
    else:
        carried = not (pull or fractions) and _carried_on(vocab, tokens, anchors, pieces, last, _asked(dialogue, last))
    # "more!! proper postcard blue" after "can they be bluer": more, said with the last change's own quality
    own_again = bool(anchors) and last is not None and not (pull or fractions or carried) \
        and bool(find_phrases(tokens, vocab.repeat)) and all(
            a.category == "band" and _moved_band(last, a.key, casts=False) for a in anchors)
    own_said = {i for a in anchors for i in _clause_span(tokens, a.pos)} if own_again else set()
    if carried or own_again:       # "warmer still", "even brighter" after "make the sky warmer": that change again, there
        anchors = []
    # "same on the water": a colour said as the place of a retarget is where, not what to bring back
    # ... and so is a quality said of the place itself ("the same on that black corner top left", "same thing on
    # the dark blotchy bit at the bottom": which corner, which bit)
    described = _described_place(tokens, pieces, find_phrases(tokens, vocab.retarget))
    placed = bool(find_phrases(tokens, vocab.retarget)) and all(
        a.category == "band" or set(range(a.pos, a.pos + len(a.text.split()))) <= described for a in anchors)
    if (anchors and not said_why and not placed) or _restore_said(vocab, tokens):
        return _restored(vocab, tokens, pieces, dialogue, request)
    repeat = find_phrases(tokens, vocab.repeat) or ([(0, 0, 1.0)] if carried else [])
    # ("that's too much": the "too" of a pull-back is not "that too")
    pulled = {i for found in (pull, fractions) for pos, n, _ in found for i in range(pos, pos + n)}
    # ... nor the "now" of "it looks weirdly cold now" ("now the sky" opens a clause), nor "on that last one"
    retarget = [r for r in find_phrases(tokens, vocab.retarget) if not pulled & set(range(r[0], r[0] + r[1]))
                and not (tokens[r[0]:r[0] + r[1]] == ["now"] and r[0] > 0 and tokens[r[0] - 1] not in SEPARATORS
                         and tokens[r[0] - 1] not in _OPENERS)
                # ("its too bright, the wood ...": "too" before a quality is no "as well", which ends a clause)
                and not (tokens[r[0]:r[0] + r[1]] == ["too"] and r[0] + 1 < len(tokens)
                         and tokens[r[0] + 1] not in SEPARATORS and tokens[r[0] + 1] not in FILLER
                         and tokens[r[0] + 1] not in vocab.chatter)
                # ("ok now its too bright, the wood looks all washed out. pull it back": says how it is now)
                and not (tokens[r[0]:r[0] + r[1]] == ["now"] and (verbs or fractions) and _in_statement(tokens, r[0]))
                and tokens[r[0] + r[1]:r[0] + r[1] + 2] not in (["that", "last"], ["the", "last"], ["this", "last"])]
    if not retarget and not anchors and and_a_place(tokens):
        retarget = [(0, 1, 1.0)]      # "and the flag", after a change: that change there too
    if says_vague_ask(tokens) and not (repeat or pull or fractions or retarget) \
            and any(p.category == "target" for p in pieces) and not any(p.category == "global" for p in pieces):
        return None        # "do something about the middle bit": what to do there is not said (the planner asks)
    insisted = find_phrases(tokens, vocab.insist_words)     # "more, i insist": the repeat, past the sweet spot
    covered: set[int] = set()
    for found in (repeat, pull, fractions, retarget, insisted,
                  find_phrases(tokens, vocab.going_back_verbs) if fractions else []):
        for pos, n, _ in found:
            covered.update(range(pos, pos + n))
    for p in pieces:
        if p.category in _CARRIED or (said_why and p.category in ("problem", "intent", "band")) \
                or (carried and p.category == "intent"):
            covered.update(range(p.pos, p.pos + len(p.text.split())))
    if said_why:          # "that's gone foggy", "he looks washed out now": how the complaint is said
        covered.update(i for i, t in enumerate(tokens) if t in _BECOME or t in _SAID_OF)
    # "go halfway back on that last one": the last change, named as such
    covered.update(k for i, t in enumerate(tokens) if t == "last" and i > 0 and tokens[i - 1] in ("that", "the", "this")
                   for k in (i, i + 1) if k < len(tokens) and (k == i or tokens[k] in _CHANGE_NOUNS))
    # "gone a bit far on the colour, just a little less": an aspect of the last change named with a
    # follow-up ("the colour", "the texture") says which of its ops the follow-up is about
    aspects = [vocab.restore_nouns[t] for i, t in enumerate(tokens) if t in vocab.restore_nouns
               and (repeat or pull) and i > 0 and tokens[i - 1] in DETERMINERS]
    aspects += [p.key for p in anchors if said_why and named_part(p)]      # "ease off the warmth"
    if aspects:
        covered.update(i for i, t in enumerate(tokens) if t in vocab.restore_nouns)
        covered.update(i for i, t in enumerate(tokens) if t in ("on", "gone", "went", "got", "far", "with"))
    covered |= likeness | own_said      # ("proper postcard blue": how the quality is said)
    covered |= _described_place(tokens, pieces, retarget)     # ("that black corner top left": which corner)
    covered |= _pointed_there(tokens)     # "more up there": the place the last change went, pointed at
    if carried or repeat:
        covered |= _likened(tokens, pieces)      # "darker still, like almost black": how far, not a new request
    # "only a touch", "just a little": how much, said again
    mag_at = {p.pos for p in pieces if p.category == "magnitude"}
    covered.update(i for i, t in enumerate(tokens) if t in ("only", "just") and i + 1 in mag_at)
    # "bit more on the pups only", "just on the sky": which place alone, said again
    place_ends = {p.pos + len(p.text.split()) for p in pieces if p.category == "target"}
    place_starts = {p.pos for p in pieces if p.category == "target"}
    covered.update(i for i, t in enumerate(tokens) if t in ("only", "just", "alone")
                   and (i in place_ends or any(s in place_starts for s in (i + 1, i + 2, i + 3))))
    # "same for the big one on the left": a word between a determiner and "one" names which one
    covered.update(i for i, t in enumerate(tokens) if 0 < i < len(tokens) - 1 and tokens[i - 1] in DETERMINERS
                   and tokens[i + 1] in ("one", "ones"))
    for pos, n, _ in repeat:
        # "bit more of that creaminess": a word no table knows after "more of that" names the last change
        after = pos + n
        if tokens[after - 1] in DETERMINERS and after < len(tokens) and tokens[after] not in vocab.known_words:
            covered.add(after)
    unmet = list(getattr(dialogue, "unmet", None) or [])
    go_ahead = vocab.says_go_ahead(message) and not (pull or fractions)
    if unmet and (go_ahead or not (repeat or pull or fractions)):
        # ("go on then, have a guess": "go on" is the go-ahead here, not a repeat)
        # the last turn asked where ("I can't find the lamp"): "the whole thing then", "go ahead and guess"
        # ("can you make it look like its lifting off": an "it" of a new request is no "the whole thing")
        if any(p.category == "global" and (go_ahead or p.text not in vocab.back_references) for p in pieces) \
                and not any(p.category == "target" for p in pieces):
            return _finish_unmet(vocab, unmet, list(getattr(dialogue, "unmet_labels", None) or []), [None])
        if vocab.says_go_ahead(message) and getattr(dialogue, "unmet_guess", None):
            return _unmet_on_guess(vocab, dialogue)
    if unmet and repeat and not (pull or fractions) and getattr(dialogue, "unmet_guess", None) \
            and not any(p.category == "target" for p in pieces):
        # "a bit more" right after "I can't find the cup": nothing was changed to do more of; the person wants
        # the request done, so it goes on the best guess for that place, and the reply says so
        return _unmet_on_guess(vocab, dialogue)
    # hesitations ("erm", "ooh", "whoa") and words no table knows ("crunchy") say nothing new; a word
    # after "the" names a place ("a bit more on the lamp"), which the grammar reads
    leftover_at = [i for i, t in enumerate(tokens) if i not in covered and t not in FILLER
                   and t not in vocab.chatter and t not in SEPARATORS and t not in INTERJECTIONS
                   and (t in vocab.known_words or (i > 0 and tokens[i - 1] in DETERMINERS))]
    leftover = [tokens[i] for i in leftover_at]
    things = [t for t in leftover if t not in vocab.known_words]
    places = {w for p in pieces if p.category in ("target", "band") for w in p.text.split()}
    # ("the same for the round badge on her chest": a word that asks nothing, said of the thing, describes it)
    described = {w for p in pieces if p.category == "word" for w in p.text.split()}
    said_same = any({"same", "too", "also", "aswell", "and"} & set(tokens[pos:pos + n]) for pos, n, _ in retarget)
    # (the words as typed too: "the guy's coat" reads as "the guy", yet the coat was said)
    last_said = set(tokenize(last.message)) | set(re.findall(r"[a-z]+", (last.message or "").lower())) \
        if last is not None else set()
    said_things = [t for t in leftover if t not in places]
    if said_things and (repeat or pull) and all(_said_in(t, last_said) for t in said_things):
        # "more on the flag pls" after "desaturate the flag a bit": the thing the last change was asked of
        # (found, or worked on through a guess) is where it was: that change again there ("bit more on the
        # eyes" after brightening the eyes: a word the tables know, said of the last change, the same)
        leftover = []
    elif things and retarget and all(t in things or t in places or (t in described and said_same) for t in leftover):
        # "same for the mountains at the top": the thing is where the part of the frame said is; "the same
        # on the reflection in the water": a thing no finder knows, asked about, nothing changed
        if any(p.category == "target" and vocab.is_frame_part(p.key) for p in pieces):
            leftover = []
        elif dialogue is not None and (dialogue.base_edit() is not None or unmet and said_same and not anchors):
            # (also after "I can't find the spoon": "and the cup handle too" is asked about the same way)
            named = [n.text for c in split_clauses(pieces) for n in named_places(vocab, c)]
            thing = named[0] if named else "the " + " ".join(things[:3])
            # (a request still waiting for its place waits on: "the whole thing then" finishes it)
            waiting = {"move": "not_found", "unmet": unmet, "guess": None, "place": thing} \
                if unmet and dialogue.base_edit() is None else {}
            return FollowUp(question=f"I can't find \u201c{thing}\u201d by myself, so I haven't changed "
                                     f"anything. Paint over it and say \u201cthe same on the selection\u201d, or "
                                     f"name a part of the frame (\u201cthe same on the left\u201d).",
                            quick_replies=["The same on the selection", "The same overall"], dialogue=waiting,
                            labels=list(getattr(dialogue, "unmet_labels", None) or []) if waiting else [])
    base = dialogue.base_edit() if dialogue is not None else None
    band_things = [vocab.band_things[p.text] for p in pieces if p.category == "band" and p.text in vocab.band_things]
    if retarget and band_things and base is not None and any(c.target for c in base.changes) and not (pull or fractions) \
            and not any(p.category == "target" for p in pieces) and all(t in places for t in leftover):
        # "the same for the lake" after brightening the sky: that change on the thing the colour finds
        mags = [vocab.magnitudes[p.key] for p in pieces if p.category == "magnitude"]
        return _retarget(vocab, base, [], mags[-1] if mags else 1.0, band=band_things[0])
    if leftover and (verbs or fractions or repeat) and last is not None:
        # "the suit's gone a bit toasty, can u take it down a notch": a clause that says how the photo is
        # now, said with a pull-back, is why the last change goes back, not a place to work on ("bit more,
        # it still looks kinda pinky": why it goes on)
        kept_at = {p.pos for p in pieces if p.category in ("protect", "except")}
        leftover = [tokens[i] for i in leftover_at if not _in_statement(tokens, i)
                    or (not (verbs or fractions) and kept_at & _clause_span(tokens, i))]
    if leftover:
        return None
    # magnitude words said besides the follow-up phrase ("way too much"), not inside it ("too far")
    phrase_spans: set[int] = set()
    for found in (repeat, pull, fractions):
        for pos, n, _ in found:
            phrase_spans.update(range(pos, pos + n))
    mags = [vocab.magnitudes[p.key] for p in pieces if p.category == "magnitude"
            and not set(range(p.pos, p.pos + len(p.text.split()))) <= phrase_spans]
    targets = list(dict.fromkeys(p.key for p in pieces if p.category == "target"))
    if targets and last is not None and "deal" in tokens:
        # "bit more, same deal with the sky" after "brighten it but keep the sky as it is": the place the
        # last change kept is kept again, not where the change goes now ("same on the sky" is the sky)
        targets = [t for t in targets if not _kept_by(vocab, last, t)]
    # "tone down the sky": less of the last change there if it touched the sky, else a request of
    # its own (the grammar's implicit intent), never the last change copied onto the sky
    toned = bool(targets) and any(p.category == "reduce" and p.text in vocab.tone_down for p in pieces)
    wants_less = bool(pull or fractions or toned)
    wants_more = bool(repeat)
    if targets and any(p.category == "rollback" for p in pieces) and not (repeat or pull or fractions):
        return None                 # "undo the face": the grammar resets that place
    # "same again but less", "now the background but more": what comes before the "but" repeats
    said_before = repeat + retarget + [(p.pos, 1, 1.0) for p in pieces if p.category == "target"]
    but_scale = _repeat_but(vocab, tokens, said_before)
    if but_scale is not None:       # "same again but less": the repeat, scaled down
        wants_less, fractions, mags = False, [], []
    elif wants_less and wants_more:   # "no, less": the last one said wins
        last_pull = max(pos for pos, _, _ in pull + fractions)
        wants_more = max(pos for pos, _, _ in repeat) > last_pull
        wants_less = not wants_more
    # "do that on the whole pic": the last change, said of the whole photo
    # ("a small bit more on that side": a pointer back at the place the last change was on, not the whole photo)
    whole = bool(retarget) and not targets and any(p.category == "global" and p.text not in vocab.back_references
                                                   for p in pieces)
    if not (wants_less or wants_more or targets or insisted or whole):    # a place alone after a change: "and the sky"
        return None
    if targets and unmet and not (wants_less or wants_more):
        return _finish_unmet(vocab, unmet, list(getattr(dialogue, "unmet_labels", None) or []), targets)
    if targets and not (wants_less or wants_more or retarget or insisted) and _REMARK_VERBS & set(tokens):
        return None     # "haha my cat would hate this": a place said in a remark is no "the same there"
    if insisted and not wants_less and not targets and base is not None and base.changes:
        # "i insist", "more, i insist": what the last request asked, past the sweet spot it was held at
        # (the planner reads that request again); repeated when nothing was held
        return FollowUp(labels=list(base.labels), dialogue={"move": "insist", "base_asset": base.asset_id,
                                                            "scale": mags[-1] if mags else 1.0})
    if targets:
        # "dial back the highlights": a follow-up only when the last change touched that place;
        # otherwise the grammar reads it ("tone down <place>", or asks what to do there)
        specs = [vocab.place(t)[0] for t in targets]
        touched = base is not None and any(_on_place(c.target, specs) for c in base.changes)
        if wants_less and not touched and said_why and base is not None and base.changes \
                and all(c.target is None for c in base.changes) \
                and any({"back", "off"} & set(tokens[pos:pos + n]) for pos, n, _ in verbs) \
                and all(_in_statement(tokens, p.pos) for p in pieces if p.category == "target"):
            # "now its glaring, the face is all white. dial it back some" after brightening it all: the
            # place is where the complaint shows, said of how it is now; the whole last change, which
            # touched that place too, goes back
            targets = []
        elif wants_less and not touched and verbs and not anchors and base is not None and base.changes \
                and all(_in_statement(tokens, p.pos) and p.text in _PRONOUNS for p in pieces if p.category == "target"):
            # "too much, he looks like someone's shining a torch on him" after lifting his face: the place said
            # in how it looks now is the person the change was on; the last change goes back where it was
            targets = []
        elif base is None or not base.changes or (wants_less and not touched):
            return None
    if base is None or not base.changes:
        what = "less of" if wants_less else "more of"
        return FollowUp(question=f"There is no earlier change to go on yet: {what} what?",
                        quick_replies=list(vocab.no_history_replies))
    if whole and not wants_less:
        return _retarget(vocab, base, [None], mags[-1] if mags else (repeat[-1][2] if repeat else 1.0))
    state = request.state
    if wants_less:
        if fractions:
            fraction = fractions[-1][2]
        else:
            low, high = vocab.pull_back_limits
            fraction = min(high, max(low, vocab.pull_back_fraction * (mags[-1] if mags else 1.0)))
        only_targets = [vocab.place(t)[0] for t in targets] if targets else None
        # the aspect's ops, and every op of the change in the same stage ("the colour": vibrance too)
        named = {op for a in aspects if a in vocab.intents for op, _ in vocab.intents[a].ops}
        stages = {ops.get_op(op).stage for op in named}
        only_ops = {c.op for c in base.changes if c.op in named or ops.get_op(c.op).stage in stages} or None
        if only_ops is not None and not any(c.op in only_ops for c in base.changes):
            only_ops = None          # the aspect named is not among what the change moved: all of it
        drained = any(c.op in _MORE_COLOUR and c.after < c.before for c in base.changes)
        toward = _toward_colours(vocab, tokens, base) if drained and not named else None
        if toward:
            # "a hair less blue" after a cyanotype, "less brown" after sepia: the tone goes back, not the black
            # and white (taking back what drained the colour would add colour: only what moved toward the
            # colour named goes back)
            only_ops = toward
        said = [vocab.intents[a].label for a in dict.fromkeys(aspects) if a in vocab.intents]
        moves = pull_back_moves(base, state, fraction, 0, only_ops=only_ops, only_targets=only_targets,
                                discrete=vocab.discrete_ops, least=vocab.pull_back_least,
                                what="\u201c" + ", ".join(said) + "\u201d" if said and only_ops else "")
        if not moves:
            return FollowUp(notes=["That change is already fully taken back."],
                            dialogue={"move": "pull_back", "base_asset": base.asset_id})
        return _pulled_back(base, moves, fraction)
    scale = mags[-1] if mags else (repeat[-1][2] if repeat else 1.0)
    # "like 50% more": that share of the last change again
    shares = [share for pos, _, _ in repeat if pos > 0 and (share := percent_share(tokens[pos - 1])) is not None]
    if shares and wants_more:
        scale = min(shares[-1], 2.0)
    if wants_more:
        scale = max(scale, vocab.repeat_floor)       # "a smidge more" is still a step that shows
    if but_scale is not None:
        scale = (repeat[0][2] if repeat else 1.0) * but_scale
    if targets:
        specs = [vocab.place(t)[0] for t in targets]
        here = [c for c in base.changes if _on_place(c.target, specs)]
        if here and wants_more:
            # "more on the face" right after brightening the face: the same there again
            return FollowUp(moves=_repeat_moves(vocab, base, scale, only=here), labels=list(base.labels),
                            dialogue={"move": "repeat", "base_asset": base.asset_id, "scale": scale})
        # "i meant only the sky", "just on the sky" after warming it all: that change there alone, taken off
        # the rest ("the same on the sky too" adds to it)
        only = any(t in _ONLY and (i in place_ends or any(
            k in place_starts for k in (i + 1, i + 2, i + 3))) for i, t in enumerate(tokens)) \
            or any(t in ("mean", "meant") and i > 0 and tokens[i - 1] == "i" for i, t in enumerate(tokens))
        also = bool(_ALSO & set(tokens)) or bool(find_phrases(tokens, {("as", "well"): True}))
        if only and not also and not wants_more and any(not _on_place(c.target, specs) for c in base.changes):
            return _confined(vocab, base, targets, specs, request.state)
        return _retarget(vocab, base, targets, scale)
    return FollowUp(moves=_repeat_moves(vocab, base, scale), labels=list(base.labels),
                    dialogue={"move": "repeat", "base_asset": base.asset_id, "scale": scale})


#: Verbs that make a message naming a place a remark about it ("my cat would hate this", "my mum loves
#: the sky"), not the last change asked there ("the big one top right" is).
_REMARK_VERBS = frozenset({"would", "will", "hate", "hates", "love", "loves", "like", "likes", "think", "thinks",
                           "thought", "said", "says", "was", "were", "took", "remember", "reminds", "miss"})


def _asked(dialogue, edit) -> list[str]:
    """The qualities ``edit`` asked for: its own, or, for a repeat ("a bit more"), those of the change it
    repeated."""
    seen = set()
    while edit is not None and not edit.intents and edit.followup.get("move") in ("repeat", "insist") \
            and edit.asset_id not in seen:
        seen.add(edit.asset_id)
        edit = dialogue.by_asset(edit.followup.get("base_asset"))
    return list(edit.intents) if edit is not None else []


def _said_in(word: str, said: set[str]) -> bool:
    """Whether ``word`` was among the words ``said``, as said or as the same word grown or cut short ("the
    stone" after "the stonework", "the buildings" after "the building"; four letters at least)."""
    return word in said or any(len(w) >= 4 and len(word) >= 4 and (w.startswith(word) or word.startswith(w))
                               for w in said)


def _less_again(vocab: Vocabulary, tokens: list[str], pieces: list, last) -> bool:
    """Whether the message only says "less" with a word that carries on ("even less", "a bit less still")
    after a change that asked for less of something: more of that change, not a step back from it."""
    if last is None or not last.changes or "less" not in tokens or not any(t in vocab.carry_on for t in tokens):
        return False
    asked = read_pieces(vocab, tokenize(last.message or ""))
    if "less" not in tokenize(last.message or "") and not any(p.category == "reduce" for p in asked):
        return False
    sizes = {i for p in pieces if p.category == "magnitude" for i in range(p.pos, p.pos + len(p.text.split()))}
    return all(t == "less" or t in vocab.carry_on or i in sizes or t in FILLER or t in vocab.chatter
               or t in SEPARATORS for i, t in enumerate(tokens))


def _carried_on(vocab: Vocabulary, tokens: list[str], anchors: list, pieces: list, last, asked: list[str]) -> bool:
    """Whether the message only says the last change's own qualities again, with a word that carries
    them on ("deeper still" after "a deeper blue", "even warmer" after "warm the sky", "a bit more warmth"
    after "warm up her face"), or asks for more because the photo still has what that change fixed ("more,
    it still feels kinda cold" after warming the face, "more please, its still too bright" after darkening
    the sky): a repeat of that change where it was, not a new
    request on the whole photo."""
    if last is None or not last.changes or not anchors:
        return False
    # "more" said right before the quality ("a tad more warm", "a bit more warmth") carries it on only
    # after a change on a place: on the whole photo the quality again is the same request
    placed = any(c.target for c in last.changes)
    more = {p.pos + len(p.text.split()) for p in pieces if p.text.split()[-1] == "more"
            and p.category in ("increase", "magnitude")} if placed else set()
    # ... or right after it, ending the message ("dim it a bit more", "warm it up a little more" after
    # darkening the background): the same, said verb first
    ends_more = placed and bool(pieces) and pieces[-1].text.split()[-1] == "more" \
        and pieces[-1].category in ("increase", "magnitude") and all(a.pos < pieces[-1].pos for a in anchors)
    # "hmm WAY darker than that": the quality said against the last result carries it on
    # (after a change on a place: on the whole photo the quality again is the same request)
    than = {k for i, t in enumerate(tokens) if t == "than" and i + 1 < len(tokens) and tokens[i + 1] in _THAN_NOW
            for k in (i, i + 1)} if placed else set()
    said = tokenize(last.message.lower())
    # "like waaay deeper" after "can the sky be a deeper blue": the last request's own word, said again
    # with how much more, carries it on there (on the whole photo the quality again is the same request)
    echoed = placed and any(p.category == "magnitude" and vocab.magnitudes.get(p.key, 1.0) > 1.0 for p in pieces) \
        and all(a.category == "intent" and all(w in said for w in a.text.split()) for a in anchors)
    if not any(t in vocab.carry_on for t in tokens) and not any(a.pos in more for a in anchors) and not ends_more \
            and not than and not echoed:
        return False
    if any(p.category in ("reduce", "target", "rollback", "reset") for p in pieces):
        return False
    own = [p for p in anchors if p.category == "intent" and (p.key in asked
                                                            or all(w in said for w in p.text.split()))]
    # ... or its opposite, said of how the photo still is ("it still feels kinda cold")
    still = [p for p in anchors if p.category == "intent" and _stated(tokens, p) and "still" in tokens
             and (vocab.intents[p.key].opposite in asked if p.key in vocab.intents else False)
             # ... or a complaint that change fixes ("more please, its still too bright" after darkening the sky)
             or p.category == "problem" and "still" in tokens and p.key in vocab.problems
             and bool(set(vocab.problems[p.key].fixes) & set(asked))]
    if len(own) + len(still) != len(anchors) or (still and not more and not any(
            p.category == "increase" or p.text.split()[-1] == "more" for p in pieces)):
        return False
    # ("dim it a bit more": the "it" of the verb is what the last change worked on, not the whole photo)
    if any(p.category == "global" and not (ends_more and p.text in ("it", "them")) for p in pieces) and not still:
        return False
    stated = {i for p in still for i in _clause_span(tokens, p.pos)}      # how the photo still is
    spoken = {i for p in pieces if p.category in ("intent", "magnitude", "increase", "global")
              for i in range(p.pos, p.pos + len(p.text.split()))}
    pointed = _pointed_there(tokens) | _likened(tokens, pieces)   # ("even darker back there, like almost black")
    return all(i in spoken or t in vocab.carry_on or t in FILLER or t in vocab.chatter or t in SEPARATORS
               or t in INTERJECTIONS or i in stated or i in pointed or i in than for i, t in enumerate(tokens))


#: Words that make a pull-back an overshoot said ("way too much", "went too far", "back it off").
_OVERSHOOT = frozenset({"back", "much", "far"})

#: What a comparative is said against when it means the last result: "darker than that", "warmer than now".
_THAN_NOW = frozenset({"that", "this", "now", "before", "it", "thatt"})


def _likened(tokens: list[str], pieces: list | None = None) -> set[int]:
    """A clause that opens with "like" after a follow-up ("darker still, like almost black"), or with a wish for
    "it" that names no quality ("hmm more, i want it almost black up there"): those tokens."""
    out: set[int] = set()
    asked = {p.pos for p in pieces or () if p.category in ("intent", "band", "problem", "target")}
    for i, t in enumerate(tokens):
        start = i if t == "like" else None
        for opener in WISH_OPENERS if t not in SEPARATORS else ():
            n = len(opener)
            if tuple(tokens[i:i + n]) == opener and i + n < len(tokens) and tokens[i + n] in POINTING_BACK:
                start = i
        if start is not None and i > 0 and tokens[i - 1] in SEPARATORS:
            end = next((k for k in range(i + 1, len(tokens)) if tokens[k] in SEPARATORS), len(tokens))
            if t == "like" or not asked & set(range(i, end)):
                out.update(range(i, end))
    return out




def _pointed_there(tokens: list[str]) -> set[int]:
    """Where a message points at a place with "there" ("back there", "up there", "in there"): those tokens."""
    return {k for i, t in enumerate(tokens) if t == "there"
            for k in (i, i - 1) if k >= 0 and (k == i or tokens[k] in ("back", "up", "down", "over", "in"))}


def _scaled_back(vocab: Vocabulary, base, anchors: list, pieces: list, state: EditState) -> FollowUp:
    """The last change taken back to the amount said ("only a bit brighter": a bit of the quality's usual
    step, against what the change moved); the profile's pull-back share when nothing says how much."""
    mags = [vocab.magnitudes[p.key] for p in pieces if p.category == "magnitude"]
    low, high = vocab.pull_back_limits
    fraction = vocab.pull_back_fraction
    intent = vocab.intents.get(anchors[0].key)
    if mags and intent is not None and intent.ops:
        op, usual = next(iter(intent.ops))
        moved = [c for c in base.changes if c.op == op and c.delta]
        if moved and usual:
            fraction = 1.0 - mags[-1] * abs(usual) / abs(moved[0].delta)
    fraction = min(high, max(low, fraction))
    return _pulled_back(base, pull_back_moves(base, state, fraction, 0, discrete=vocab.discrete_ops,
                                              least=vocab.pull_back_least), fraction)


def _done_again(vocab: Vocabulary, tokens: list[str], pieces: list) -> tuple[list[str], list]:
    """"now do it a LOT", "do that way more": the last change again, by the amount said (read as "again")."""
    at = next((i for i, t in enumerate(tokens) if t == "do" or (t not in FILLER and t not in SEPARATORS)), None)
    if at is None or tokens[at:at + 1] != ["do"] or tokens[at + 1:at + 2] not in (["it"], ["that"], ["this"]):
        return tokens, pieces
    rest = [p for p in pieces if p.pos >= at + 2 and p.category != "separator"]
    if not rest or not all(p.category in ("magnitude", "increase") or p.text in FILLER for p in rest) \
            or not any(p.category == "magnitude" for p in rest):
        return tokens, pieces
    tokens = tokens[:at] + ["again"] + tokens[at + 2:]
    return tokens, read_pieces(vocab, tokens)


#: Words around a bare number that make it the last change's new amount ("actually make it +30", "try 50
#: instead", "go to 40").
_AMOUNT_WORDS = frozenset({"make", "it", "that", "try", "go", "to", "instead", "actually", "then", "set", "put", "how",
                           "about", "maybe", "lets", "let's", "please", "pls", "ok", "okay", "now", "rather", "no",
                           "more", "like", "say", "value", "amount", "at", "just", "hmm", "um", "so", "do", "of"})


def _amount_for_last(tokens: list[str], pieces: list) -> float | None:
    """A number said as the last change's new amount, alone or with words that only frame it ("make it +30",
    "try 50 instead"): the number, signed when a sign was written; None when anything else is said."""
    numbers = [p for p in pieces if p.category == "number"]
    if len(numbers) != 1 or numbers[0].text.endswith("%"):
        return None
    if any(p.category not in ("number", "separator", "word", "global") for p in pieces):
        return None
    if not all(p.text in _AMOUNT_WORDS or p.text in FILLER for p in pieces if p.category in ("word", "global")):
        return None
    return float(numbers[0].key) if numbers[0].key else None


def _resized(vocab: Vocabulary, base, amount: float, signed: bool, state: EditState) -> FollowUp | None:
    """The setting the last change moved most made ``amount`` ("make it +30" after clarity +20, "try 15" after
    it was taken back to 10), the change's other moves scaled with it; said back when it is there already."""
    changes = [c for c in _own_changes(base) if c.delta and c.op not in vocab.discrete_ops]
    if not changes:
        return None
    main = max(changes, key=lambda c: abs(c.delta))
    now = state.value(main.op, main.target) if main.target else state.value(main.op)
    goal = amount if signed else math.copysign(abs(amount), now or main.delta)
    goal = max(-100.0, min(100.0, goal))        # the ops' own scale, whatever number was typed
    if abs(goal - now) < 0.5:
        return FollowUp(question=f"{main.op.replace('_', ' ').capitalize()} is already {now:+g} after "
                                 f"{_what(base)}; say \u201cmore\u201d or \u201cless\u201d to go on from there.",
                        quick_replies=["More", "Less"])
    if now == main.before:
        return None
    ratio = (goal - main.before) / (now - main.before)
    moves = []
    for rank, c in enumerate(changes):
        value_now = state.value(c.op, c.target) if c.target else state.value(c.op)
        value = int(round(c.before + (value_now - c.before) * ratio))
        if value != value_now:
            moves.append(Move(c.op, value, "set", c.target, f"{main.op.replace('_', ' ')} at {goal:+g}",
                              f"setting {main.op.replace('_', ' ')} to {goal:+g}", "followup", 0, rank,
                              "followup"))
    return FollowUp(moves=moves, labels=list(base.labels),
                    dialogue={"move": "resize", "base_asset": base.asset_id, "amount": goal}) if moves else None


def _pulled_back(base, moves: list[Move], fraction: float) -> FollowUp:
    """The follow-up that takes ``fraction`` of ``base`` back with ``moves``."""
    return FollowUp(moves=moves, labels=[f"less of {', '.join(base.labels[:2]) or 'the last change'}"],
                    dialogue={"move": "pull_back", "base_asset": base.asset_id, "fraction": round(fraction, 2)})


def _repeat_moves(vocab: Vocabulary, base, scale: float, only=None) -> list[Move]:
    """The moves of ``base`` again, times ``scale`` (only the changes in ``only`` when given)."""
    moves = []
    for rank, c in enumerate(_own_changes(base)):
        if only is not None and c not in only:
            continue
        if c.op in vocab.discrete_ops:       # "again" after "rotate left": the same choice once more
            if c.op == "rotate" or not c.delta:
                value = c.delta
            else:
                continue
        else:
            value = _nonzero(c.delta * scale)
        if value:
            moves.append(Move(c.op, value, "add", c.target, f"more of {_what(base)}",
                              f"repeating {_what(base)} (\u00d7{scale:g})", "followup", 0, rank, "followup"))
    return moves


def _turned(vocab: Vocabulary, base, way: int) -> FollowUp | None:
    """"no, the other way", "no wait not lower, HIGHER" right after a darkening: that change the other way round,
    from where it started, as far as it went (brighter than before the darkening, not the darkening taken back);
    a direction the change went already ("higher" after brightening) is more of it. ``way``: 0 for the other way,
    else the way said (+1 up), which turns round only the ops that went against it. None when the change moved
    nothing that has a way (a rotation)."""
    changes = [c for c in _own_changes(base) if c.delta and c.op not in vocab.discrete_ops]
    if not changes:
        return None
    # (a direction turns round only what went against it: "not lower, HIGHER" after "an old film print, lower the
    # contrast" raises the contrast and leaves the warm tone)
    against = [c for c in changes if not way or (c.delta > 0) != (way > 0)]
    if not against:
        scale = 0.5
        return FollowUp(moves=_repeat_moves(vocab, base, scale), labels=list(base.labels),
                        dialogue={"move": "repeat", "base_asset": base.asset_id, "scale": scale})
    what = _what(base)
    # (a change that turned the one before it round, turned again, is that one back: "wrong way" after "lower")
    again = base.followup.get("move") == "reverse"
    moves = [Move(c.op, c.before if again else c.before - c.delta, "set", c.target, f"{what} the other way",
                  f"turning {what} the other way round", "followup", 0, rank, "followup")
             for rank, c in enumerate(against)]
    return FollowUp(moves=moves, labels=[f"{base.labels[0]} the other way" if base.labels else "the other way"],
                    notes=[f"In place of {what}, not on top of it."],
                    dialogue={"move": "reverse", "base_asset": base.asset_id})


def _restore_said(vocab: Vocabulary, tokens: list[str]) -> bool:
    """Whether a restoring verb is said, its particle after the object too ("bring a bit of the warmth back": the
    profile's "<verb> back" verbs said around their object)."""
    if find_phrases(tokens, vocab.restore):
        return True
    split = {verb[0] for verb in vocab.restore if len(verb) == 2 and verb[1] == "back"}
    for i, t in enumerate(tokens):
        if t in split:
            for u in tokens[i + 1:i + 7]:
                if u in SEPARATORS:
                    break
                if u == "back":
                    return True
    return False


def _restored(vocab: Vocabulary, tokens: list[str], pieces: list, dialogue, request) -> FollowUp | None:
    """"bring back a hint of colour" after a desaturation: a share of the last change taken back on the ops
    it moved against the quality named; None when the message says no such thing."""
    anchors = [p for p in pieces if p.category in _ANCHORS]
    named = [p.key for p in anchors if p.category == "intent"] + \
        [vocab.restore_nouns[p.text] for p in pieces if p.category == "word" and p.text in vocab.restore_nouns]
    # ("ok now it looks grey and dead, bring some of the colour back": how it looks now is why)
    if not _restore_said(vocab, tokens) or not named or any(
            p.category != "intent" and not (p.category == "problem" and _in_statement(tokens, p.pos))
            for p in anchors):
        return None
    base = dialogue.base_edit() if dialogue is not None else None
    if base is None or not base.changes:
        return None
    # (the op or its colour-band kin: "some of the colour back" after "less orange" is the orange saturation)
    only = {c.op for key in named if key in vocab.intents for op, value in vocab.intents[key].ops
            for c in base.changes if (c.op == op or c.op.startswith(op + "_")) and c.delta * value < 0}
    if not only:
        return None
    amounts = [vocab.restore_amounts[t] for t in tokens if t in vocab.restore_amounts]
    fraction = amounts[-1] if amounts else vocab.restore_fraction
    moves = pull_back_moves(base, request.state, fraction, 0, only_ops=only, discrete=vocab.discrete_ops,
                            least=vocab.pull_back_least)
    if not moves:
        return None
    said = ", ".join(dict.fromkeys(vocab.intents[k].label for k in named if k in vocab.intents))
    return FollowUp(moves=moves, labels=[f"some of it back ({said})"],
                    dialogue={"move": "pull_back", "base_asset": base.asset_id, "fraction": round(fraction, 2)})


#: What a person sees an op do, by the judge's measure of it: how light, how crisp, how warm, how colourful.
_SEEN_AS = {"lightness": "light", "upper_tones": "light", "lower_tones": "light", "top_tones": "light",
            "bottom_tones": "light", "contrast": "crisp", "texture": "crisp", "detail": "crisp", "haze": "crisp",
            "warm_balance": "warm", "magenta_balance": "magenta", "chroma": "colourful"}


def _seen_ways(op: str, value: float) -> set[tuple[str, int]]:
    """How a move of ``op`` by ``value`` shows ({("light", 1)}: lighter), or nothing when no measure says."""
    effect = ops.get_op(op).effect
    seen = _SEEN_AS.get(effect.metric) if effect is not None and value else None
    return {(seen, 1 if value * effect.polarity > 0 else -1)} if seen else set()


def caused_by_last(vocab: Vocabulary, draft: Draft, request) -> FollowUp | None:
    """"the lamp is totally blown out now", "the stars look crunchy now" right after brightening or sharpening
    it all: a complaint said of how a thing is now, whose fix runs against what the last change did, is that
    change gone too far; it goes back (by the profile's share), and the thing is where it shows, no place to ask
    about. None when the complaint is not of what the last change did."""
    dialogue = getattr(request, "dialogue", None)
    base = dialogue.base_edit() if dialogue is not None else None
    if base is None or not draft.moves or not all(m.complaint for m in draft.moves) \
            or "now" not in tokenize((request.message or "")[:MAX_MESSAGE_CHARS]):
        return None
    fixes = {(seen, -way) for m in draft.moves for seen, way in _seen_ways(m.op, m.value)}
    changes = [c for c in _own_changes(base) if _seen_ways(c.op, c.delta) & fixes]
    if not changes:
        return None
    low, high = vocab.pull_back_limits
    fraction = min(high, max(low, vocab.pull_back_fraction))
    moves = pull_back_moves(base, request.state, fraction, 0, only_ops={c.op for c in changes},
                            discrete=vocab.discrete_ops, least=vocab.pull_back_least)
    return _pulled_back(base, moves, fraction) if moves else None


def _kept_by(vocab: Vocabulary, edit, target: str) -> bool:
    """Whether every change of ``edit`` went on everything but ``target`` (the place it kept)."""
    spec = vocab.targets.get(target)
    if not spec or not edit.changes:
        return False
    try:
        outside = normalize_mask_spec(dict(spec, invert=not spec.get("invert")))
        return all(c.target and normalize_mask_spec(c.target) == outside for c in edit.changes)
    except MaskSpecError:
        return False


def _on_place(target, specs: list[dict]) -> bool:
    """Whether a change's mask is one of the places ``specs``, or that place with another kept out ("the
    highlights, all but the subject" is on the highlights)."""
    if not target:
        return False
    if normalize_mask_spec(target) in specs:
        return True
    return target.get("type") == "intersect" and any(
        not part.get("invert") and normalize_mask_spec(part) in specs for part in mask_parts(target)[1:])


#: Words that end the place a "the same on ..." names: what follows is asked of its own.
_PLACE_ENDS = frozenset({"but", "and", "then", "plus", "except"})


def _described_place(tokens: list[str], pieces, retargets) -> set[int]:
    """The positions of the place a "the same on ..." names, described in words of its own: "do the same to that
    black corner top left", "same thing on the dark blotchy bit at the bottom", "the same for the big one at the
    right end of the third row". The place runs from the phrase to the clause's end (or a "but", "and"), and
    counts only when a part of the frame or a place found is said in it; a quality counts as a description only
    after a determiner and before the last place said ("the same on the sky a bit warmer" asks warmer there)."""
    out: set[int] = set()
    for pos, n, _ in retargets:
        if "same" not in tokens[pos:pos + n]:
            continue        # ("now darken the sky": "now" opens a new request, it describes no place)
        end = next((k for k in range(pos + n, len(tokens)) if tokens[k] in SEPARATORS or tokens[k] in _PLACE_ENDS),
                   len(tokens))
        # ("the round badge on her chest": a thing said of a person's part is no described place)
        places = [p for p in pieces if p.category == "target" and pos + n <= p.pos < end and p.text not in PERSONS]
        if not places:
            continue
        last = max(p.pos + len(p.text.split()) for p in places)
        first_determiner = next((k for k in range(pos + n, last) if tokens[k] in DETERMINERS), None)
        asked = {i for p in pieces if p.category in ("intent", "magnitude", "problem", "reduce")
                 and (p.pos >= last or first_determiner is None or p.pos < first_determiner)
                 for i in range(p.pos, p.pos + len(p.text.split()))}
        out |= {i for i in range(pos + n, end) if i not in asked}
    return out


def _clause_span(tokens: list[str], i: int) -> set[int]:
    """The positions of the clause (between separators) that token ``i`` is in."""
    start = max([k + 1 for k in range(i) if tokens[k] in SEPARATORS] + [0])
    end = next((k for k in range(i, len(tokens)) if tokens[k] in SEPARATORS), len(tokens))
    return set(range(start, end))


def _in_statement(tokens: list[str], i: int) -> bool:
    """Whether token ``i`` is in a clause that says how the photo is now ("the suit's gone toasty")."""
    span = _clause_span(tokens, i)
    return any(tokens[k] in _BECOME or tokens[k].endswith("'s") for k in span) or any(
        # ("i cant even see the shape of it anymore": what can no longer be seen)
        tokens[k] in _NOT_ABLE and any(t in _SEEING for t in tokens[k + 1:k + 4]) for k in span)


def _stated(tokens: list[str], piece) -> bool:
    """Whether a look is said of how the photo is now ("that's gone foggy", "it looks all dreamy"), not asked."""
    return any(t in _BECOME for t in tokens[max(0, piece.pos - 2):piece.pos])


#: What the last change is called ("that last one", "the last edit").
_CHANGE_NOUNS = frozenset({"one", "change", "edit", "step", "tweak", "bit"})

#: Words a clause may open with before a "now" that starts it ("ok now the sky", "and now the left").
_OPENERS = frozenset({"and", "ok", "okay", "right", "so", "then", "but", "alright", "cool", "nice", "great"})

#: Who or what a complaint said with a pull-back is about ("he looks washed out now, dial it back").
_SAID_OF = frozenset({"he", "she", "it", "they", "he's", "she's", "they're", "hes", "shes", "theyre", "this", "that",
                      "everything", "everyone"})
#: Words before a look that say the photo has it ("it's gone foggy", "now it looks washed out").
_BECOME = word_lists()["state_words"]
_NOT_ABLE = word_lists()["not_able"]
_SEEING = word_lists()["seeing_verbs"]


#: The colours a white-balance move casts over what it touches ("they look orange now" after warming them).
_CASTS_GIVEN = {("temperature", 1): {"orange", "yellow", "red"}, ("temperature", -1): {"blue", "aqua"},
                ("tint", 1): {"magenta", "purple"}, ("tint", -1): {"green"}}


def _moved_band(edit, band: str, casts: bool = True) -> bool:
    """Whether ``edit`` moved the colour ``band``: its own op ("saturation_green"), a change on its colour mask,
    or (``casts``) a white-balance move that casts that colour (warming: orange)."""
    return any(c.op.endswith("_" + band) or (c.target or {}).get("band") == band
               or (casts and band in _CASTS_GIVEN.get((c.op, 1 if c.delta > 0 else -1), ())) for c in edit.changes)


def _undoes_last(vocab: Vocabulary, problem: str, dialogue) -> bool:
    """Whether a problem's fix moves back an op the last change moved ("crunchy" after "sharper")."""
    base = dialogue.base_edit() if dialogue is not None else None
    found = vocab.problems.get(problem)
    if base is None or found is None:
        return False
    # an op of one colour band counts for its kind ("too pale" after less red saturation on the face)
    moved = {(c.op.split("_")[0], c.delta > 0) for c in base.changes if c.delta}
    return any((op.split("_")[0], value < 0) in moved for fix in found.fixes if fix in vocab.intents
               for op, value in vocab.intents[fix].ops)


def guessed_place_note(vocab: Vocabulary, place: str, label: str, why: str = "my best guess for it") -> str:
    """What the reply says when a place no finder knows was worked on through a stand-in for it (``why``: its
    best guess, where its colour is)."""
    tail = " or paint over it and say \u201con the selection\u201d" if "selection" in vocab.targets else ""
    return (f"I can't pick out \u201c{place}\u201d by itself, so I worked on {label}, {why}; "
            f"say \u201cundo\u201d if that's wrong{tail}.")


def _unmet_on_guess(vocab: Vocabulary, dialogue: DialogueState) -> FollowUp:
    """The request the last turn asked about ("I can't find the lamp"), done on the planner's guess for that
    place, with the guess said in the reply as a guess made at once is."""
    guess = dialogue.unmet_guess
    done = _finish_unmet(vocab, list(dialogue.unmet), list(getattr(dialogue, "unmet_labels", None) or []), [guess])
    place = getattr(dialogue, "unmet_place", "") or ""
    if place:
        done.dialogue["guessed"] = guessed_place_note(vocab, place, vocab.place(guess)[1])
        done.dialogue["guessed_place"] = True
        done.dialogue["place_said"] = place      # ("put the helmet back": the change names the place it was asked for)
    return done


def _finish_unmet(vocab: Vocabulary, unmet: list[dict], labels: list[str], targets: list[str | None]) -> FollowUp:
    """"use the top of the frame then": the last request, that found no place, on the place named now
    (None: the whole photo, "just do the whole thing then")."""
    moves = []
    what = "\u201c" + ", ".join(labels[:2]) + "\u201d" if labels else "what you asked"
    for t in targets:
        spec, place = vocab.place(t) if t is not None else (None, "the whole photo")
        for rank, g in enumerate(unmet):
            if g.get("op") not in ops.OPS or ops.get_op(g["op"]).stage == "geometry":
                continue
            moves.append(Move(g["op"], int(g.get("value") or 0), str(g.get("mode") or "add"), spec,
                              labels[0] if labels else f"on {place}", f"doing {what} on {place}",
                              "followup", 0, rank, "followup"))
    places = [vocab.place(t)[1] if t is not None else "the whole photo" for t in targets]
    asked = f"{', '.join(labels[:2]) or 'the same'} on {' and '.join(places)}"
    return FollowUp(moves=[m for m in moves if m.value or m.mode == "set"], labels=list(labels),
                    dialogue={"move": "finish_unmet", "targets": [t for t in targets if t], "asked": asked})


def _repeat_but(vocab: Vocabulary, tokens: list[str], repeat: list) -> float | None:
    """The factor of "same again but less" (profile followups.repeat_but), or None.

    Only when a repeat phrase comes before the "but" and everything after it (but
    filler) is one repeat_but phrase: "no, less" and "too much" stay pull-backs.
    """
    if not repeat or "but" not in tokens:
        return None
    cut = len(tokens) - 1 - tokens[::-1].index("but")
    if not any(pos < cut for pos, _, _ in repeat):
        return None
    said = [t for t in tokens[cut + 1:] if t not in SEPARATORS]
    for tail in (said, [t for t in said if t not in vocab.chatter]):   # "a bit less" as said, then "less"
        hits = find_phrases(tail, vocab.repeat_but)
        if len(hits) == 1 and hits[0][1] == len(tail):
            return hits[0][2]
    return None


_ONLY, _ALSO = word_lists()["only_words"], word_lists()["also_words"]      # "only the sky", "the sky too"
#: Verbs that ask for a change of their own, unnamed ("keep the top but fix the rest").
_ASKS = frozenset({"do", "fix", "change", "make", "sort", "tweak", "edit", "improve", "work"})
#: What a message that only keeps a place may say besides the place ("leave the sky alone pls, its perfect").
_KEPT_ONLY = frozenset({"protect", "except", "target", "band", "separator", "global", "word"})


def _kept_out(vocab: Vocabulary, tokens: list[str], pieces: list, base, state: EditState) -> FollowUp | None:
    """"but leave the sky alone", "dont touch her face", "except the sky" right after a change: that
    change again from where it started, on everything but the places said, so they look as they did before it
    (or None when the message asks anything else, or keeps a thing no finder knows, which the grammar asks
    about)."""
    keeps = [p for p in pieces if p.category in ("protect", "except")]
    first = keeps[0].pos if keeps else 0
    # how the place is to stay, said after the keep word ("that should stay dark", "keep it white")
    kept_as = {p.pos for p in pieces if p.category in ("intent", "band") and p.pos > first
               and any(k.pos < p.pos and not any(s in SEPARATORS for s in tokens[k.pos:p.pos]) for k in keeps)}
    # ("no, not on the left, the other side" corrects where the change went: not ours)
    if not keeps or not base.changes or any(p.category not in _KEPT_ONLY and p.pos not in kept_as for p in pieces) \
            or says_vague_ask(tokens) or _ASKS & set(tokens):
        return None       # ("keep the top, but do something about the rest": what to change is not said)
    # the places after the first keep word; or, said with a keep word after them ("the sky should stay how it
    # was", "not the background though, that should stay dark"), the places said
    targets = list(dict.fromkeys(p.key for p in pieces if p.category == "target" and p.pos > first)) \
        or list(dict.fromkeys(p.key for p in pieces if p.category == "target"))
    # ("leave the mountains alone": a thing after a determiner that no table knows is asked about)
    if not targets or any(p.category == "word" and p.text not in vocab.known_words and p.pos > 0
                          and tokens[p.pos - 1] in DETERMINERS for p in pieces):
        return None
    # the place the last change went to, or one it already kept out: keeping it is no keeping out of that
    # change ("leave the left alone" right after "darken all but the left" asks nothing new)
    specs = [normalize_mask_spec(vocab.place(t)[0]) for t in targets]
    inverted = [normalize_mask_spec(dict(sp, invert=not sp.get("invert"))) for sp in specs]
    if any(_on_place(c.target, specs) or _on_place(c.target, inverted) for c in base.changes):
        return None
    what = _what(base)
    undone, again = [], []
    for rank, c in enumerate(_own_changes(base)):
        if c.op in vocab.discrete_ops or ops.get_op(c.op).stage in ("geometry", "finishing"):
            continue
        now = state.value(c.op, c.target) if c.target else state.value(c.op)
        undone.append(Move(c.op, now - c.delta, "set", c.target, f"less of {what}", "", "followup", 0, rank,
                           "followup"))
        again.append(Move(c.op, c.delta, "add", c.target, f"{what} kept off", "", "followup", 0, rank, "followup"))
    if not again:
        return None
    moved = protect_moves(vocab, again, targets)
    places = " and ".join(vocab.place(t)[1] for t in targets)
    phrase = f"keeping {places} as {'they were' if len(targets) > 1 else 'it was'} before {what}"
    moves = [Move(m.op, m.value, m.mode, m.target, m.label, phrase, m.source, m.order, m.rank, m.kind)
             for m in undone + moved]
    return FollowUp(moves=moves, labels=list(base.labels),
                    dialogue={"move": "kept_out", "base_asset": base.asset_id, "targets": targets,
                              "undone": [[m.op, spec_key(m.target)] for m in undone]})


def _confined(vocab: Vocabulary, base, targets: list[str], specs: list[dict], state: EditState) -> FollowUp:
    """"i meant only the sky" right after warming the whole photo: each change of ``base`` that is not on
    those places set back to its value before ``base``, and made again on them."""
    what = _what(base)
    places = " and ".join(vocab.place(t)[1] for t in targets)
    phrase = f"keeping {what} to {places} only"
    undone, again = [], []
    for rank, c in enumerate(_own_changes(base)):
        if c.op in vocab.discrete_ops or ops.get_op(c.op).stage in ("geometry", "finishing") \
                or _on_place(c.target, specs):
            continue
        now = state.value(c.op, c.target) if c.target else state.value(c.op)
        undone.append(Move(c.op, now - c.delta, "set", c.target, f"less of {what}", phrase, "followup", 0, rank,
                           "followup"))
        again += [Move(c.op, c.delta, "add", spec, f"{what} only on {places}", phrase, "followup", 0, rank,
                       "followup") for spec in specs]
    return FollowUp(moves=undone + again, labels=list(base.labels),
                    dialogue={"move": "confined", "base_asset": base.asset_id, "targets": targets,
                              "undone": [[m.op, spec_key(m.target)] for m in undone]})


def _retarget(vocab: Vocabulary, base, targets: list[str | None], scale: float,
              band: str | None = None) -> FollowUp:
    """The base change's moves again, on each place named (None: the whole photo), or on the colour ``band``
    where the change did not already go ("the same for the water" after brightening the sky)."""
    moves = []
    corner = vocab.corner(targets)
    targets = [corner] if corner is not None else targets       # ("lower down on the right": one corner)
    # The whole-image moves of that change already reach the new place: only the local ones move.
    local = any(c.target for c in base.changes)
    for t in targets:
        spec, place = vocab.place(t) if t is not None else (None, "the whole photo")
        for rank, c in enumerate(_own_changes(base)):
            if local and not c.target:
                continue
            value = _nonzero(c.delta * scale)
            if not value or (c.target and normalize_mask_spec(c.target) == spec):
                continue
            if ops.get_op(c.op).stage == "geometry":    # framing ops have no local version
                continue
            moves.append(Move(c.op, value, "add", spec, f"same on {place}",
                              f"doing the same ({_what(base)}) on {place}", "followup", 0, rank, "followup"))
    for rank, c in enumerate(base.changes if band else ()):
        value = _nonzero(c.delta * scale)
        if not value or not c.target or ops.get_op(c.op).stage == "geometry":
            continue
        spec = normalize_mask_spec({"type": "intersect", "masks": [
            {"type": "color", "band": band}, dict(c.target, invert=not c.target.get("invert"))]})
        moves.append(Move(c.op, value, "add", spec, f"same on the {band}s",
                          f"doing the same ({_what(base)}) on the {band}s", "followup", 0, rank, "followup"))
    return FollowUp(moves=moves, labels=list(base.labels),
                    dialogue={"move": "retarget", "base_asset": base.asset_id, "targets": [t for t in targets if t]})


__all__ = ["FollowUp", "caused_by_last", "pull_back_moves", "read_followup", "reduce_look_moves"]
