"""The debugger's conversation: scripted lines echoed after the prompt, then an interactive prompt or stdin."""
from __future__ import annotations

from emulator.debug.commands import PROMPT, Session


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _run_lines(session: Session, lines) -> bool:
    """Run scripted lines, each echoed after the prompt; True when one of them failed."""
    failed = False
    for line in lines:
        if line.strip().startswith("#"):
            continue
        session.say(PROMPT + line.strip())
        failed |= not session.execute(line)
        if session.quitting:
            break
    return failed


def _prompt_loop(session: Session) -> None:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import InMemoryHistory

    class CommandCompleter(Completer):
        def get_completions(self, document, complete_event):
            text = document.text_before_cursor
            word = "" if not text or text[-1].isspace() else text.split()[-1]
            for candidate in session.completions(text):
                yield Completion(candidate, start_position=-len(word))

    prompt = PromptSession(history=InMemoryHistory(), completer=CommandCompleter(),
                           complete_while_typing=False)
    while not session.quitting:
        try:
            line = prompt.prompt(PROMPT)
        except KeyboardInterrupt:
            continue
        except EOFError:
            session.say("quit")
            break
        session.execute(line)


def converse(session: Session, scripts, stdin, stdout, *, batch: bool) -> bool:
    """Run the command files, then (unless batch with scripts) the prompt on a terminal or stdin's lines;
    True when a command failed."""
    failed = False
    for lines in scripts:
        failed |= _run_lines(session, lines)
        if session.quitting:
            return failed
    if not (batch and scripts):
        if _is_terminal(stdin) and _is_terminal(stdout):
            _prompt_loop(session)
        else:
            failed |= _run_lines(session, (line.rstrip("\n") for line in stdin))
    return failed
