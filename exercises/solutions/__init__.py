"""Reference solutions of the track (the tests run against these by default)."""
