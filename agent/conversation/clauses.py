"""Clauses of a message and what is said in them: complaints, places, modifiers, as words.

The planner's vocabulary (:mod:`agent.conversation.vocabulary`) turns a message into pieces;
this module splits the pieces into clauses and reads how they are said — a wish word said as a
complaint ("looks soft"), "don't make it so yellow", "behind her", a place no table knows ("the
cup"). The planner (:mod:`agent.planning.grammar`) and the router read clauses the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agent.conversation.vocabulary import FILLER, Piece, Vocabulary, read_pieces
from agent.conversation.words import SEPARATORS, PhraseTable, find_phrases, tokenize, word_lists

#: Pieces that name a quality: modifiers attach to them, and each starts what is said about it.
QUALITIES = ("intent", "band", "problem", "fix", "op")
#: Words that introduce a place: "the cup", "her cheek", "on his jacket".
DETERMINERS = word_lists()["place_determiners"]
#: Words before a thing that name it as one in the photo ("the grass", "my lawn"), not as what it is ("meant
#: to be grass") nor one pointed at ("that tree").
NAMING_DETERMINERS = frozenset({"the", "my", "our"})
#: Words that end a place's name: "the table around the cup" names the table; "the helmet is
#: too dark", "the coffee looks flat": the verb after the thing ends it too.
PLACE_ENDS = word_lists()["place_ends"]
#: Words that end a thing's name once begun, but may open one ("the wood round the edges", "the round badge").
PLACE_PARTICLES = word_lists()["place_particles"]
#: Said before a thing, these make it why, not where: "orange from the lamp", "because of the window".
CAUSES = word_lists()["cause_words"]
#: Said before a thing, these say what the photo should look like ("like those old prints"), unless after one
#: who likes ("i'd like the sky darker"); "for my blog" says what the photo is for.
COMPARING = word_lists()["comparison_words"]
LIKING = word_lists()["liking_words"]
PURPOSE = word_lists()["purpose_determiners"]
PHOTO_USES = word_lists()["photo_uses"]
#: After a thing, these locate one particular thing: "the pillar in the middle", "the papers under the cat".
LOCATING = word_lists()["locating_words"]
#: A person's part ("her nose") is one particular thing; size words ("the little bowl") make it one too.
PERSONS = word_lists()["person_determiners"]
CLOTHING = word_lists()["clothing"]
SIZES = word_lists()["size_words"]
LARGE = word_lists()["large_size_words"]
COLOUR_SAID_OF = word_lists()["colour_said_of"]
COLOUR_OF_A_THING = word_lists()["colour_of_a_thing"]
#: "the rocket only": which thing alone, not part of its name
_ONLY = word_lists()["only_words"]
#: "id like the stone to look more golden", "i want it almost black": what the person wishes a thing to be.
WISH_OPENERS = tuple(tuple(w.split()) for w in word_lists()["wish_openers"])
#: "brighten them", "make its colours richer": words that point back at a thing said before.
POINTING_BACK = word_lists()["pointing_back"]


@dataclass
class Clause:
    pieces: list[Piece]
    joined: str | None = None            # how it joins the previous clause: "soft" | "hard" | None

    def of(self, *categories: str) -> list[Piece]:
        return [p for p in self.pieces if p.category in categories]

    @property
    def text(self) -> str:
        return " ".join(p.text for p in self.pieces)

    @property
    def content_words(self) -> list[str]:
        return [p.text for p in self.pieces if p.category == "word" and p.text not in FILLER]


def sizes_in_names(pieces: list[Piece]) -> list[Piece]:
    """"that little sugar bowl", "the big tree": a size word between a determiner and a thing names the
    thing; it says nothing of how much to change."""
    out = list(pieces)
    for i, p in enumerate(pieces):
        if p.category == "magnitude" and 0 < i < len(pieces) - 1 and pieces[i - 1].text in DETERMINERS \
                and pieces[i + 1].category == "word" and pieces[i + 1].text not in PLACE_ENDS:
            out[i] = Piece("word", p.text, p.text, p.pos)
    return out


#: Words that make "<word> and <quality>" one description ("nice and bright", "good and dark").
NICE_AND = frozenset({"nice", "good", "lovely", "plenty"})


#: "so people can see it", "so the buyers could tell": a purpose said with who it is for and a modal
_PURPOSE_MODALS = frozenset({"can", "could", "will", "would", "might", "may", "shall"})


def _purpose_so(pieces: list[Piece], i: int) -> bool:
    """Whether the "so" at ``i`` opens a purpose ("brighten it up some so people can actually see whats for
    sale"): a modal follows within four pieces, before any separator."""
    if pieces[i].text != "so" or pieces[i].category != "word":
        return False
    for q in pieces[i + 1:i + 5]:
        if q.category == "separator":
            return False
        if q.text in _PURPOSE_MODALS:
            return True
    return False


def split_clauses(pieces: list[Piece]) -> list[Clause]:
    """Clauses at separators. What a request is for ("dim the backdrop so the pups pop more") is said
    after a purpose word (grammar.purpose) and is no request of its own: it is left out up to the next
    separator, when a request came before it in the clause."""
    out: list[Clause] = []
    current: list[Piece] = []
    joined: str | None = None
    pending: str | None = None
    skipping = False
    for i, p in enumerate(pieces):
        if p.category == "separator" and p.text == "and" and 0 < i < len(pieces) - 1 \
                and pieces[i - 1].text in NICE_AND and pieces[i + 1].category in QUALITIES:
            continue          # "keep the sky nice and blue": one description, not "and bluer"
        if p.category == "purpose" or _purpose_so(pieces, i):
            skipping = any(c.category in QUALITIES for c in current)
            continue
        if skipping and p.category != "separator":
            continue
        skipping = False
        if p.category == "separator":
            if current:
                out.append(Clause(current, joined))
                current = []
                joined = None
                pending = p.key
            else:
                pending = "hard" if "hard" in (pending, p.key) else p.key
            continue
        if not current:
            joined = pending if out else None
            pending = None
        current.append(p)
    if current:
        out.append(Clause(current, joined))
    return out


def avoided_degree(vocab: Vocabulary, clause: Clause) -> Clause:
    """"don't make it so yellow", "dont make it that dark": an avoid word with a degree word right before
    the quality (profile grammar.avoid_degree) asks for less of what is there, read as "not so yellow";
    "don't make it darker" (no degree word) still leaves the quality alone. Only for a clause that no
    request comes before (:func:`agent.planning.grammar.read_request`)."""
    pieces = list(clause.pieces)
    for i, p in enumerate(pieces):
        j = next((k for k in range(i + 1, len(pieces)) if pieces[k].category in QUALITIES), None)
        if p.category != "avoid" or j is None:
            continue
        degree = pieces[j - 1] if j - 1 > i else None
        if degree is not None and degree.text in vocab.avoid_degree:
            said = [Piece("reduce", "reduce", "not so", degree.pos)] if degree.category != "reduce" else [degree]
        elif pieces[j].text.split()[0] in vocab.avoid_degree:
            said = []                                    # "don't make it too yellow": the complaint itself
        else:
            continue
        # the avoid word and the words after it ("make it") go; places said between them stay
        kept = [b for b in pieces[i + 1:j - 1 if said else j] if b.category not in ("word", "global")]
        return Clause(pieces[:i] + kept + said + pieces[j:], clause.joined)
    return clause


def around(vocab: Vocabulary, clause: Clause) -> Clause:
    """"behind her", "around him": a relation word (profile place_guesses.relations) right before a place
    whose complement is the relation's target (the subject, for the background) names that target."""
    pieces = list(clause.pieces)
    target = vocab.place_relation_target
    for i, p in enumerate(pieces):
        if p.category != "target" or p.key not in vocab.place_relation_of or not target:
            continue
        end = i - 1 if i and pieces[i - 1].text in DETERMINERS else i      # "behind the cat"
        if any(tuple(" ".join(b.text for b in pieces[k:end]).split()) in vocab.place_relations
               and all(b.category == "word" for b in pieces[k:end])        # "except her": the except grammar's
               for k in range(max(0, end - 3), end)):
            pieces[i] = Piece("target", target, p.text, p.pos)
    return Clause(pieces, clause.joined)


#: The white-balance qualities a colour cast is fixed with: "bluish" wished for is their opposite ("make it bluish").
#: The quality that puts a band's cast in, by the sign of the white-balance move that takes it out (band_casts);
#: its values are the cast qualities, its ops the white-balance ones.
CAST_CAUSES = {("temperature", 1): "cooler", ("temperature", -1): "warmer", ("tint", 1): "green_tint",
               ("tint", -1): "magenta_tint"}
_CAST_FIXES = frozenset(CAST_CAUSES.values())
#: Verbs that ask for a quality ("make it bluish", "give it a blue tint"); not "can you fix the blue tint".
CAST_WISHES = word_lists()["cast_wishes"]
#: Words that say how the photo is, not what is wished ("make it warmer, it looks bluish").
BEING = word_lists()["being_verbs"]
#: "even it out", "make them match": one part is to match the rest.
EVENING = PhraseTable.of(word_lists()["evening_words"])
#: Said right after a colour, these name its cast, not the tint slider ("a cold bluish tint").
_CAST_NOUNS = frozenset({"tint", "cast", "tone", "hue", "wash"})


def read_wished_casts(vocab: Vocabulary, clause: Clause, wished: bool = False) -> Clause:
    """A colour cast asked for ("make it bluish", "give it a blue tint", "a cold bluish tint") is that colour's
    white-balance quality (cooler), not a complaint of it (warmer): a cast word said after a wish word ("make",
    "give", "add", "more") in the same clause, with no "less", "not" or statement word ("looks", "is") between
    them. The cast noun after it ("tint") goes with it. ``wished``: the clause goes on a wish said in the clause
    before ("want this to feel like a wet back alley at night, dark and bluish")."""
    pieces = list(clause.pieces)
    out: list[Piece] = []

    def asked(i: int) -> bool:
        return _wished_here(vocab, pieces[:i]) or wished and not any(
            b.category in ("reduce", "avoid", "protect", "negation") or b.text in ("not", "no", "too")
            or b.text in BEING for b in pieces[:i])
    for i, p in enumerate(pieces):
        problem = vocab.problems.get(p.key) if p.category == "problem" else None
        fix = vocab.intents.get(problem.fixes[0]) if problem is not None and len(problem.fixes) == 1 \
            and problem.fixes[0] in _CAST_FIXES else None
        flip = fix.opposite if fix is not None else None
        if flip and flip in vocab.intents and not p.text.startswith("too ") and asked(i):
            out.append(Piece("intent", flip, p.text, p.pos))
            continue
        # ("make it look washed out", "i want it dull": a complaint's word asked for is its fixes undone)
        flips = [vocab.intents[f].opposite for f in problem.fixes if f in vocab.intents] \
            if problem is not None and fix is None and problem.fixes else []
        if flips and all(f in vocab.intents for f in flips) and not p.text.startswith("too ") and asked(i):
            out += [Piece("intent", f, p.text, p.pos) for f in dict.fromkeys(flips)]
            continue
        cast = _cast_of(vocab, p) if i + 1 < len(pieces) and pieces[i + 1].text in _CAST_NOUNS else None
        if cast and asked(i):
            # "give it a brown tint": any colour said with a cast noun is the white balance that puts it in
            out.append(Piece("intent", cast, p.text, p.pos))
            continue
        if p.category == "op" and p.text in _CAST_NOUNS and out and out[-1].category == "intent" \
                and out[-1].key in _CAST_FIXES:
            continue            # "a bluish tint": the cast's noun, not the tint slider
        out.append(p)
    return Clause(out, clause.joined)


def _cast_of(vocab: Vocabulary, piece: Piece) -> str | None:
    """The quality a colour word's cast is ("brown" -> warmer), or None for a piece that is no band with a cast."""
    if piece.category != "band" or piece.key not in vocab.band_casts:
        return None
    op, fix = vocab.band_casts[piece.key]
    name = CAST_CAUSES.get((op, 1 if fix > 0 else -1))
    return name if name in vocab.intents else None


def and_a_place(words: list[str]) -> bool:
    """Whether a message only adds a place with "and" ("and the flag", "and the two skinny towers either side of
    it"): the last change there too; "and the dog is called rex" says something of it."""
    return words[:1] == ["and"] and len(words) > 2 and words[1] in DETERMINERS and not BEING & set(words)


def wished_after(vocab: Vocabulary, clause: Clause) -> bool:
    """Whether a clause ends on a wish ("want this to feel like a wet back alley at night"): what the next clause
    says, with no verb of its own, is wished too."""
    return _wished_here(vocab, list(clause.pieces))


def only_qualities(clause: Clause) -> bool:
    """Whether a clause says only qualities and how much ("dark and bluish"), no word of its own ("bluish
    though")."""
    return all(p.category in ("intent", "problem", "band", "magnitude", "separator", "increase")
               or p.text in ("and", "a", "bit", "little", "more", "quite", "very", "kinda", "pretty")
               for p in clause.pieces)


def _wished_here(vocab: Vocabulary, before: list[Piece]) -> bool:
    """Whether the pieces before a quality ask for it: a wish word among them, and after it nothing that takes
    it back or says how the photo is ("make it less ...", "make it not ...", "it looks ...")."""
    wish_at = max((k for k, b in enumerate(before) if b.category == "increase"
                   or (b.category == "word" and b.text.split()[0] in CAST_WISHES
                       and not (b.text == "like" and k > 0 and before[k - 1].text in BEING))), default=None)
    if wish_at is None:
        return False
    after = before[wish_at + 1:]
    # ("make it look bluish": "look" right after "make it" is part of the wish)
    framed_wish = len(after) >= 2 and after[0].category == "global" and after[1].text in BEING
    # ("want this to feel like a back alley": a verb of being after "to" is part of the wish too)
    return not any(b.category in ("reduce", "avoid", "protect", "negation") or b.text in ("not", "no", "too")
                   or (b.text in BEING and not (framed_wish and k == 1) and not (k > 0 and after[k - 1].text == "to"))
                   for k, b in enumerate(after))


def read_complaints(vocab: Vocabulary, clause: Clause, after_complaint: bool = False) -> Clause:
    """Read a wish word said as a complaint ("looks soft", "it's cold") as that problem.

    A frame word (profile complaints.frames) within the three pieces before it makes it a
    complaint, unless a wish word ("make it look soft") comes earlier in what is said of it:
    since the quality or the statement opener (complaints.statements) before it, so "more
    contrast please, it's a bit flat" complains of flatness. ``after_complaint``: the clause before
    was a complaint; "and gloomy" opening this one (joined by "and") is said in the same breath
    ("it's a bit dark and gloomy").
    """
    pieces = list(clause.pieces)
    for i, p in enumerate(pieces):
        key = tuple(p.text.split())
        if p.category not in ("intent", "band") or key not in vocab.flippable:
            continue
        before = pieces[max(0, i - 3):i]
        framed = any(tuple(b.text.split()) in vocab.frames or
                     any((t,) in vocab.frames for t in b.text.split()) for b in before) \
            or trailing_also(vocab, pieces, i + 1) \
            or (after_complaint and clause.joined == "soft"
                and all(b.category == "magnitude" or
                        (b.category == "word" and (b.text in FILLER or b.text in vocab.chatter)) for b in pieces[:i]))
        start = max((k + 1 for k in range(i) if pieces[k].category in QUALITIES
                     or pieces[k].text in vocab.statements), default=0)
        wished = any(tuple(b.text.split()) in vocab.wishes or (b.text.split()[0],) in vocab.wishes
                     for b in pieces[start:i])
        # ("a bit more seafoam blue": more of it is asked, however it is framed)
        # ... unless compared with what was wanted: "its a bit more blue than i like")
        asked_more = any(b.category == "increase" for b in pieces[max(0, i - 2):i]) \
            and not any(b.text == "than" for b in pieces[i + 1:])
        if framed and not wished and not asked_more:
            pieces[i] = Piece("problem", vocab.flippable[key], p.text, p.pos)
    return Clause(pieces, clause.joined)


def says_evening(tokens: list[str]) -> bool:
    """Whether ``tokens`` ask for one part to match the rest ("even it out", "make them match")."""
    return EVENING.has(tokens)


def read_evened(vocab: Vocabulary, clause: Clause) -> Clause:
    """"the left side is way darker cus of the spine, even it out": a comparative said of how a place is, in a
    message that asks for it to match the rest (:func:`says_evening`), is fixed the other way there."""
    pieces = list(clause.pieces)
    for i, p in enumerate(pieces):
        opposite = vocab.intents[p.key].opposite if p.category == "intent" and p.key in vocab.intents else None
        said = [b for b in pieces[:i] if b.category != "magnitude"]
        if opposite in vocab.intents and said and said[-1].text in BEING:
            pieces[i] = Piece("intent", opposite, p.text, p.pos)
    return Clause(pieces, clause.joined)


def trailing_also(vocab: Vocabulary, pieces: list[Piece], i: int) -> bool:
    """Whether ``pieces[i]`` is "too" said last in the clause (only filler after it): "as well"."""
    if i >= len(pieces) or pieces[i].text not in vocab.trailing_also:
        return False
    return all(p.category == "word" and (p.text in FILLER or p.text in vocab.chatter) for p in pieces[i + 1:])


def unknown_words(vocab: Vocabulary, clause: Clause, before: int | None = None) -> list[str]:
    """Content words of the clause that no table knows (and that are not filler; nor a size that says which
    one, "the big one top right")."""
    ones = {p.pos - 1 for p in clause.pieces if p.text in ("one", "ones")}
    return [p.text for p in clause.pieces if p.category == "word" and (before is None or p.pos < before)
            and p.text not in FILLER and p.text not in vocab.chatter and p.text not in vocab.not_places
            and p.text not in DETERMINERS and (p.text,) not in vocab.frames
            and not (p.text in SIZES and p.pos in ones)]


def names_a_thing(vocab: Vocabulary, clause: Clause, pos: int) -> bool:
    """Whether a thing is named before ``pos`` ("the suit is too orange"), not the whole photo."""
    return bool(unknown_words(vocab, clause, before=pos))


@dataclass(frozen=True)
class NamedPlace:
    """A place named that no table knows ("the cup"). ``specific``: one particular thing, pointed at
    ("that lamp"), sized ("the little bowl"), a part of a person ("her nose") or located ("the pillar in
    the middle", "the papers under the cat"): asked about, never guessed."""

    text: str
    specific: bool
    small: bool = False     # pointed at or sized ("that lamp", "the little pink nose"): one small thing


#: Words for the photo itself: the thing after "a photo of" is what it shows, not a place in it.
_PHOTO_WORDS = frozenset({"photo", "photos", "pic", "pics", "picture", "pictures", "shot", "image", "snap",
                          "snapshot", "selfie", "photograph", "portrait", "scan"})


def kind_of_photo(vocab: Vocabulary, words: list[str]) -> bool:
    """Whether a clause only says what kind of photo it is ("black and white shot", "an old film scan"): looks
    and describing words before a word for the photo, and no word that asks ("black and white shot please")."""
    words = [w for w in words if w not in SEPARATORS]
    lists = word_lists()
    if len(words) < 2 or words[-1] not in _PHOTO_WORDS \
            or set(words) & (lists["request_verbs"] | lists["request_modals"] | {"please", "pls"}):
        return False
    return all(p.category in ("intent", "word", "magnitude") for p in read_pieces(vocab, words[:-1]))


def named_places(vocab: Vocabulary, clause: Clause) -> list[NamedPlace]:
    """Places named with a determiner that no target or mask knows ("brighten the cup").

    The noun is the last word of the run after the determiner ("the fine detail" ->
    detail), which ends at a preposition ("the table around the cup" -> table). A thing said as a
    cause ("orange from the lamp") is not where the change goes.
    """
    out = []
    pieces = clause.pieces
    for i, piece in enumerate(pieces):
        det = piece
        if piece.category in ("increase", "reduce", "set") and piece.text.split()[-1] in DETERMINERS:
            # "tone down the lamp", "raise the amp": the verb's phrase ends in the thing's determiner
            det = replace(piece, text=piece.text.split()[-1], category="word")
        # "her nose": "her" may be read as the person (a target); what follows is a part of her
        if det.text not in DETERMINERS or (det.category != "word" and det.text not in PERSONS):
            continue
        if i > 0 and pieces[i - 1].text in CAUSES:
            continue                # "everything's orange from the lamp": why, not where
        if i > 0 and pieces[i - 1].text in COMPARING and not (i > 1 and pieces[i - 2].text in LIKING):
            continue                # "a warm tint like those old nasa prints": how it should look, not where
        if i > 0 and pieces[i - 1].text == "for" and det.text in PURPOSE:
            continue                # "lawn photo for my blog": what the photo is for
        if i > 1 and pieces[i - 1].text == "of" and pieces[i - 2].text in _PHOTO_WORDS:
            continue                # "old photo of my uncle. can you make it punchier": what the photo shows
        run, sized = [], False
        end = i + 1
        for k, p in enumerate(pieces[i + 1:], i + 1):
            if p.category == "magnitude" and not run:
                sized = True        # "that little sugar bowl": a size word inside the thing's name
                end += 1
                continue
            noun_next = k + 1 < len(pieces) and pieces[k + 1].category == "word" \
                and pieces[k + 1].text not in DETERMINERS and pieces[k + 1].text not in PLACE_ENDS \
                and pieces[k + 1].text not in LOCATING and pieces[k + 1].text not in FILLER \
                and pieces[k + 1].text not in PLACE_PARTICLES
            if p.category in ("band", "problem", "intent") and len(p.text.split()) == 1 and noun_next:
                run.append(p.text)  # "the little pink nose", "the grey wall": a word before a thing describes it
                end += 1
                continue
            if p.category != "word" or p.text in DETERMINERS or p.text in PLACE_ENDS \
                    or (run and p.text in PLACE_PARTICLES and not noun_next):
                break               # ("the wood round the edges" ends at "round"; "the little round badge" not)
            run.append(p.text)
            end += 1
        while len(run) > 1 and ((run[-1],) in vocab.place_subject_said or run[-1] in _ONLY):
            run.pop()               # "the rocket itself", "the rocket only": the rocket
        if not run:
            continue
        if det.text == "its" and len(run) == 1 and (end >= len(pieces) or pieces[end].category == "separator"
                                                    or pieces[end].text == "but"):
            continue                # "its fine but yeah, dim it": "it's" typed without its apostrophe
        noun = run[-1]
        if noun in FILLER or noun in vocab.chatter or noun in vocab.not_places:
            continue
        if i > 0 and pieces[i - 1].text == "for" and (noun in PHOTO_USES or (
                end < len(pieces) and PHOTO_USES & set(pieces[end].text.split()))):
            continue                # "need this for the cafe insta": what the photo is for
        # ("the grey wall behind her": a relation to the person says it is the background, a stand-in)
        if end + 2 < len(pieces) and pieces[end].text in PLACE_PARTICLES and pieces[end + 1].text in LOCATING:
            end += 1                # "the pink building down at the bottom": the particle leads to where it is
        located = end + 1 < len(pieces) and pieces[end].text in LOCATING and pieces[end + 1].category != "global" \
            and not find_phrases([pieces[end].text], vocab.place_relations)
        if run[0] in _PHOTO_WORDS and (run[1:2] == ["for"] or len(run) == 1 and not located):
            continue                # "use this photo for a dating profile": the photo itself, no place in it
        # ("her fur", "his feathers": a coat that covers the whole animal is the subject, not a part of it)
        coat = vocab.place_nouns.get(noun) == vocab.place_default
        specific = (det.text in vocab.pointing_words or (det.text in PERSONS and noun not in CLOTHING and not coat) or sized
                    or located or bool(SIZES & set(run)))
        # ("the big helmet bottom right" is no small thing: it may be placed in its part of the frame)
        small = det.text in vocab.pointing_words or sized or bool((SIZES - LARGE) & set(run))
        out.append(NamedPlace(" ".join([det.text] + run), specific, small))
    return out


def unknown_places(vocab: Vocabulary, clause: Clause) -> list[str]:
    """The words of :func:`named_places` ("the cup")."""
    return [p.text for p in named_places(vocab, clause)]


def stand_in(vocab: Vocabulary, clause_text: str, place: str) -> str | None:
    """The target a place no mask knows is a general word for ("the floor" is the bottom, "the table around the
    cup" the background), or None when it names a thing of its own ("the sign", "the boat")."""
    tokens = tokenize(clause_text)
    if vocab.place_relation_target and find_phrases(tokens, vocab.place_relations):
        return vocab.place_relation_target
    noun = place.split()[-1]
    return vocab.place_nouns.get(noun) or vocab.place_nouns.get(noun.rstrip("s"))


def said_as_subject(vocab: Vocabulary, text: str, place: str) -> bool:
    """Whether ``text`` says the place is the photo's subject: the thing said as itself, apart from what is
    round it ("the rocket itself"), or called its hero ("its the star of the show")."""
    tokens = tokenize(text)
    noun = place.split()[-1]
    # (a word alone, "itself", right after the thing's name; a phrase, "the hero", anywhere)
    return bool(vocab.place_default) and any(n > 1 or (pos > 0 and tokens[pos - 1] == noun)
                                             for pos, n, _ in vocab.place_subject_said.find(tokens))


def colour_of(vocab: Vocabulary, clause_text: str, place: str) -> tuple[str, str] | None:
    """The colour a place no mask knows is said to have, as (band, the word said): "the green mat", "her nose
    is very pink", "the blue on the guitar body", "make the bowl less pink". That colour finds the thing where
    the photo has it. None when no colour is said of it, or only one it is to become ("make her eyes more
    green", "a pinker nose")."""
    tokens = tokenize(clause_text)
    name = place.split()[1:]
    if not name or name[-1].removesuffix("'s") in vocab.known_words:      # ("is the pink ok or ...": no thing)
        return None
    for i, word in enumerate(tokens):
        said = word.removesuffix("ish") if word.endswith("ish") else word
        band = vocab.colour_words.get(said)
        if band is None:
            continue
        if word in name[:-1] or (i > 0 and tokens[i - 1] in COLOUR_SAID_OF) \
                or (i + 1 < len(tokens) and tokens[i + 1] in COLOUR_OF_A_THING):
            return band, said.removesuffix("s")
    return None


def guess_place(vocab: Vocabulary, clause_text: str, place: str) -> str | None:
    """The target that best stands for a place no mask knows: its :func:`stand_in`, else the default (a guess
    made only when the person says to go ahead)."""
    return stand_in(vocab, clause_text, place) or vocab.place_default
