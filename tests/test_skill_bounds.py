"""Hostile or mistaken skill files in ``ATELIER_SKILLS_DIR`` cost milliseconds and say what is wrong.

A kilobyte of nested YAML aliases once took two minutes and 2.6 GB to load, and a 3000-step
``depends_on`` chain raised RecursionError. Now each file is bounded (size, values after alias
expansion, nesting depth, steps, chain length) and refused with a SkillError naming the file.
"""

from __future__ import annotations

import os
import time

import pytest

from skills import (MAX_CHAIN, MAX_FILE_BYTES, MAX_SKILL_STEPS, SkillError, SkillStep, check_graph,
                    clear_skill_cache, load_skills)

HEAD = "name: {name}\nkind: look\ndescription: a test look\nadjust: [{{op: exposure, value: 10}}]\n"


def laughs(levels: int = 9) -> str:
    """The 'billion laughs': each level repeats the one below nine times (9**levels values in under 1 KB)."""
    lines = ["  l0: &l0 [ha, ha, ha, ha, ha, ha, ha, ha, ha]"]
    lines += [f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return HEAD.format(name="laughs") + "author:\n" + "\n".join(lines) + f"\nwords: *l{levels}\n"


def chain(n: int) -> str:
    steps = "\n".join(f"  - {{id: s{i}, skill: film" + (f", depends_on: [s{i - 1}]" if i else "") + "}"
                      for i in range(n))
    return f"name: long_chain\nkind: compound\ndescription: a long chain\nsteps:\n{steps}\n"


@pytest.fixture
def user_skills(tmp_path, monkeypatch):
    folder = tmp_path / "skills"
    folder.mkdir()
    monkeypatch.setenv("ATELIER_SKILLS_DIR", str(folder))
    clear_skill_cache()
    yield folder
    clear_skill_cache()


CASES = {
    "laughs.yaml": (laughs(), "expands to more than"),
    "loop.yaml": (HEAD.format(name="loop") + "author: &a [x, *a]\n", "refers to itself"),
    "deep.yaml": (HEAD.format(name="deep") + "author: " + "[" * 3000 + "]" * 3000 + "\n", "nested more than"),
    "nested.yaml": (HEAD.format(name="nested") + "author: " + "[" * 20 + "]" * 20 + "\n", "nested more than"),
    "huge.yaml": (HEAD.format(name="huge") + "# " + "x" * (MAX_FILE_BYTES + 10) + "\n", "larger than 64 KB"),
    "many_steps.yaml": (chain(MAX_SKILL_STEPS + 8), f"a compound skill has at most {MAX_SKILL_STEPS}"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_skill_file_is_refused_quickly_with_its_name(user_skills, name):
    text, said = CASES[name]
    (user_skills / name).write_text(text, encoding="utf-8")
    start = time.process_time()
    with pytest.raises(SkillError) as caught:
        load_skills()
    assert time.process_time() - start < 5            # milliseconds in practice; minutes before the bound
    message = str(caught.value)
    assert name in message and said in message and len(message) < 500, message


def test_a_fifo_named_like_a_skill_does_not_block_loading(user_skills):
    os.mkfifo(user_skills / "pipe.yaml")
    with pytest.raises(SkillError, match="pipe.yaml: not a regular file"):
        load_skills()


def test_long_depends_on_chains_are_a_skill_error_not_a_recursion_error(user_skills):
    steps = [SkillStep(id=f"s{i}", skill="film", depends_on=(f"s{i - 1}",) if i else ()) for i in range(3000)]
    with pytest.raises(SkillError, match=f"chain longer than {MAX_CHAIN} steps"):
        check_graph(list(reversed(steps)), where="request")
    ok = steps[:MAX_CHAIN]
    assert [s.id for s in check_graph(list(reversed(ok)))] == [s.id for s in ok]   # dependencies first
    cyclic = [SkillStep("a", "film", ("c",)), SkillStep("b", "film", ("a",)), SkillStep("c", "film", ("b",))]
    with pytest.raises(SkillError, match="cycle: a -> c -> b -> a"):
        check_graph(cyclic)


def test_a_sound_compound_skill_within_the_bounds_still_loads(user_skills):
    (user_skills / "long_chain.yaml").write_text(chain(MAX_SKILL_STEPS), encoding="utf-8")
    loaded = load_skills()["long_chain"]
    assert len(loaded.steps) == MAX_SKILL_STEPS and loaded.user
