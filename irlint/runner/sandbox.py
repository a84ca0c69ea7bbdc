"""The rule sandbox: one rule on one model, under a time limit; a plugin's rule in a forked process of its own
(its own process group, its output kept out of the report), so that one that hangs, raises or ends its process
becomes a diagnostic and the other rules still run. Also the signals of a worker process."""

from __future__ import annotations

import os
import signal
import sys
import threading

from ..diagnostics import RULE_FAILED, Diagnostic
from ..findings import Finding
from ..rule import PLUGIN_RULES, Rule, plugin_output


class RuleTimeout(BaseException):
    """A rule ran past ``rule-timeout`` on one file (a BaseException: a rule's ``except Exception``
    cannot swallow it)."""


def run_rule(rule: Rule, ir, display: str, diagnostics: list[Diagnostic], timeout: float) -> list[Finding]:
    """What one rule found; a rule that raises, exits, hangs past ``timeout`` seconds or yields
    something other than a Finding becomes an IR011 diagnostic, and the other rules still run.
    A plugin's rule runs in a forked process of its own: one that ends it (``os._exit``, a crash)
    is reported, not mistaken for the end of the lint."""
    if type(rule) in PLUGIN_RULES and _CAN_FORK:
        found, problem = _checked_in_child(rule, ir, timeout)
    elif type(rule) in PLUGIN_RULES:
        with plugin_output():
            found, problem = _checked(rule, ir, timeout)
    else:
        found, problem = _checked(rule, ir, timeout)
    if problem:
        diagnostics.append(
            Diagnostic(display, 0, RULE_FAILED, f"rule {rule.code} ({rule.name}) failed on this file: {problem}")
        )
    return found


def _checked(rule: Rule, ir, timeout: float) -> tuple[list[Finding], str]:
    found: list[Finding] = []
    problem = ""
    try:
        with _time_limit(timeout):
            for item in rule.check(ir):
                if isinstance(item, Finding):
                    found.append(item)
                elif not problem:
                    problem = f"yielded {type(item).__name__} {_short(item)} instead of a Finding"
    except RuleTimeout:
        problem = f"did not finish within {timeout:g} s (rule-timeout)"
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - one broken rule (a plugin, a construct it never met) must not stop the lint
        problem = f"{type(exc).__name__}: {exc}"
    return found, problem


_CAN_FORK = hasattr(os, "fork") and sys.platform == "linux"
# a child that outlives its own rule-timeout by this much (SIGALRM blocked, stuck in C) is killed
CHILD_GRACE_SECONDS = 10


def _checked_in_child(rule: Rule, ir, timeout: float) -> tuple[list[Finding], str]:
    """``_checked`` in a forked child, which sends back its findings through a pipe."""
    import pickle
    import select

    for stream in (sys.stdout, sys.stderr):  # or the child would print the parent's pending output again
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: whatever happens, it never returns into the parent's code
        try:
            os.setpgid(0, 0)  # a group of its own: what the rule forks is ended with it
            os.close(read_end)
            worker_signals()  # ends on SIGTERM and with its parent; Ctrl-C is the parent's
            try:
                with plugin_output():  # never into the report (the child's standard output is the parent's)
                    data = pickle.dumps(_checked(rule, ir, timeout))
            except BaseException as exc:  # noqa: BLE001 - unpicklable findings, RuleTimeout past the loop
                data = pickle.dumps(([], f"{type(exc).__name__}: {exc}"))
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    try:
        os.setpgid(pid, pid)  # (also here: the child may not have got to it yet)
    except OSError:
        pass
    os.close(write_end)
    chunks = []
    deadline = None if timeout <= 0 else timeout + CHILD_GRACE_SECONDS
    killed = ended = False
    try:
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while True:
                ready, _, _ = select.select([pipe], [], [], deadline)
                if not ready:
                    killed = True
                    break
                chunk = pipe.read(1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        ended = not killed
    finally:
        if not ended:  # past the deadline, or Ctrl-C / SIGTERM in the parent: the child goes too
            _kill_group(pid)
        _, status = os.waitpid(pid, 0)
        _kill_group(pid, reaped=True)  # and anything the rule forked that is still there
    if killed:
        return [], f"did not finish within {timeout:g} s (rule-timeout); its process was killed"
    try:
        found, problem = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - nothing, or part of a message: the process ended mid-rule
        return [], f"its process ended before the rule finished ({_exit_status(status)})"
    return found, problem


def _kill_group(pid: int, reaped: bool = False) -> None:
    """SIGKILL to a rule's process and the processes it started. Once the rule's process is reaped,
    its number may be another process's: only its group, which lives on while a member does."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if not reaped:  # the child had not made its group yet
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _exit_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


class _time_limit:
    """SIGALRM after ``seconds`` in the main thread of a process (the CLI, a worker); elsewhere
    (an API call from another thread, Windows) no limit."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.armed = (
            seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
        )

    def __enter__(self):
        if self.armed:
            self.previous = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


def _alarm(signum, frame):
    raise RuleTimeout()


def worker_signals() -> None:
    # a forked worker inherits the CLI's handlers: it ends on SIGTERM, and leaves Ctrl-C to the parent,
    # which stops the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_with_parent()


def _end_with_parent() -> None:
    """Linux: SIGTERM this worker when the process that started it dies, even by SIGKILL or the
    OOM killer, which leave no chance to clean up."""
    if sys.platform != "linux":
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)
