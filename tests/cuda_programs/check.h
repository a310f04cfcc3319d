// The error check every course program starts with: print the failing call and stop.
#pragma once
#include <cstdio>
#include <cstdlib>
#define CHECK(call)                                                                         \
    do {                                                                                    \
        cudaError_t status_ = (call);                                                       \
        if (status_ != cudaSuccess) {                                                       \
            printf("CUDA error %s (%s) at %s:%d\n", cudaGetErrorName(status_),              \
                   cudaGetErrorString(status_), __FILE__, __LINE__);                        \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)
