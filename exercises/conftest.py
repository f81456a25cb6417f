"""``pytest exercises --student`` runs the track's tests against ``exercises/student/``.

Without the switch (and in CI) they run against ``exercises/solutions/``.
"""

import pytest

from exercises import _track


def pytest_addoption(parser):
    parser.addoption(
        "--student",
        action="store_true",
        default=False,
        help="run the exercise tests against exercises/student/ (your code) instead of the "
        "reference solutions",
    )


def pytest_configure(config):
    _track.use_student = config.getoption("--student")


def pytest_report_header(config):
    side = "exercises/student (your code)" if _track.use_student else "exercises/solutions"
    return f"exercise track runs against: {side}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    # A stub that is still a stub: one clear line instead of a traceback.
    if call.excinfo is not None and call.excinfo.errisinstance(NotImplementedError):
        if _track.NOT_IMPLEMENTED in str(call.excinfo.value):
            tb = call.excinfo.traceback
            where = next((e for e in reversed(tb) if "/student/" in str(e.path)), tb[-1])
            report.longrepr = f"{where.path}:{where.lineno + 1}: {call.excinfo.value}"
    return report
