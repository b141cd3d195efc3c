// Fixture for repo.layers_catch_upward: a file of an operation's folder that names no floor.
