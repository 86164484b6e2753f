"""The live path: intake to commit around one owner of work state (`pipeline`, `work_state`)."""
