"""The life of kvsim's processes: signals that unwind a command, and children that die
with their parent. Standard library only, so the CLI's start-up and every layer
(store, instruments, sweep) can use it without importing anything heavy.
"""
