"""The runtime: devices and their memory, modules loaded from PTX or SASS, kernels, launches (configuration
checks, parameter buffers, CTA batches) and the errors a launch ends in, rendered for people."""
