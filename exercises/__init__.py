"""Teaching autodiff by doing: a track of exercises with stubs, tests and solutions.

See ``exercises/README.md``.  ``student/`` holds the stubs you fill in,
``solutions/`` the reference answers, ``test_*.py`` the tests.  By default the
tests run against the solutions (that is what CI does, so the track cannot rot);
``pytest exercises --student`` runs them against your files.
"""
