"""gpuemu's own tests use its pytest plugin: golden traces (assert_trace_matches) and --update-golden."""
pytest_plugins = ["emulator.pytest_plugin"]
