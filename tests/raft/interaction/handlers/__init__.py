"""One module per interaction command, each a ``handle(env, args)`` that
returns the command's output lines (the registry is
:data:`tests.raft.interaction.driver.COMMANDS`)."""
