"""Git worktrees Cody makes for sessions (`_meta.cody.worktree`, a `task` in isolation):
created, inspected and removed with git run so that a repository can make it run nothing."""
