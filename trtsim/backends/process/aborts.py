"""How a process rank stops without a failure of its own: the launch was ended, or the rank
sent a report and must not enter the collective."""


class Aborted(BaseException):
    """The launcher ended the launch; this rank stops quietly."""


class Reported(BaseException):
    """This rank found a mismatch and sent the report; it must not enter the collective."""
