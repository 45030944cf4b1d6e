"""`--help` of every verb: every option and argument says what it is."""

from __future__ import annotations

import argparse

from colltune.cli import build_parser


def undocumented(parser: argparse.ArgumentParser, path: tuple[str, ...] | None = None):
    """(command, option) of every action without a help text, through every subcommand;
    `-h` itself and hidden aliases (help=SUPPRESS) excepted."""
    path = path or (parser.prog,)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            # A verb's help is a pseudo-action under its name (aliases share the parser).
            helped = {id(action.choices[a.dest]) for a in action._choices_actions
                      if (a.help or "").strip()}
            for name, sub in action.choices.items():
                if id(sub) not in helped:
                    yield " ".join(path), f"verb {name}"
                yield from undocumented(sub, (*path, name))
            continue
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if not (action.help or "").strip():
            yield " ".join(path), "/".join(action.option_strings) or action.dest


def test_every_option_of_every_verb_has_help():
    missing = list(undocumented(build_parser()))
    assert not missing, "\n".join(f"{cmd}: {opt}" for cmd, opt in missing)


def test_the_walk_finds_an_option_without_help():
    parser = argparse.ArgumentParser(prog="x")
    sub = parser.add_subparsers()
    verb = sub.add_parser("verb", help="a verb")
    verb.add_argument("--said", help="has help")
    verb.add_argument("--silent")
    verb.add_argument("--hidden", help=argparse.SUPPRESS)
    sub.add_parser("bare")  # no help for the verb itself
    assert sorted(undocumented(parser)) == [("x", "verb bare"), ("x verb", "--silent")]
