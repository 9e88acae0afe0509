"""Ctrl-C cannot be lost: an interrupt dropped where it landed (a garbage-collection
callback prints and drops it) is raised again at the command's next progress step."""

import signal

import pytest

from trtsim.app.interrupt import InterruptLatch
from trtsim.app.progress import Progress


@pytest.fixture
def python_sigint():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_dropped_interrupt_is_raised_at_the_next_step(python_sigint, tmp_path):
    with open(tmp_path / "err", "w") as stream, InterruptLatch() as latch, \
            Progress("explore", total=10, stream=stream, tty=False, check=latch.check) as p:
        p.update(1)                                  # nothing arrived: the step goes on
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass                                     # dropped where it landed
        with pytest.raises(KeyboardInterrupt):
            p.update(2)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # put back


def test_a_handler_of_someone_else_is_left_alone():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with InterruptLatch() as latch:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            latch.check()                            # nothing latched
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_dropped_interrupt_is_not_printed(python_sigint, capsys):
    import gc
    import weakref

    class Thing:
        pass

    with InterruptLatch() as latch:
        thing = Thing()
        keep = weakref.ref(thing, lambda _: signal.raise_signal(signal.SIGINT))
        del thing                          # the callback runs; its KeyboardInterrupt is dropped
        gc.collect()
        assert keep() is None
        with pytest.raises(KeyboardInterrupt):
            latch.check()
    assert "Exception ignored" not in capsys.readouterr().err
