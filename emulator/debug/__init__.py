"""The step debugger behind `gpuemu debug`: expressions, record/replay, the paused launch and the commands."""
