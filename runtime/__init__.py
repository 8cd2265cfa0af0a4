"""App-independent runtime services both Django apps use: the configured model backends
(backends), the hook that starts background jobs and the Progress protocol (jobs), and
advisory locks across worker processes (locks). Imports no app: core and sources import it."""
