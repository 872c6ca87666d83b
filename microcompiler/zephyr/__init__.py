"""Zephyr itself: its workspace and toolchain (workspace.py), and what it knows of its boards
(board_facts.py, catalog.py). Below boards.py and targets/: it knows nothing of them."""
