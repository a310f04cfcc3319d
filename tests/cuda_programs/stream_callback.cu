// In the manner of NVIDIA's simpleCallback: work split over several streams, each followed by a host callback
// (cudaStreamAddCallback and cudaLaunchHostFunc) that checks that stream's result once its kernel is done; an
// event makes one stream wait for another; cudaStreamQuery/cudaEventQuery report completion.
#include "check.h"

__global__ void increment(int *data, int n, int by)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += by;
}

struct Work {
    int id, n, expected, *host;
    int checked, correct;
};

static void CUDART_CB stream_done(cudaStream_t, cudaError_t status, void *user)
{
    Work *work = (Work *)user;
    int correct = status == cudaSuccess;
    for (int i = 0; i < work->n; i++) correct &= work->host[i] == work->expected + i;
    work->checked++;
    work->correct = correct;
}

static void CUDART_CB host_function(void *user) { ((Work *)user)->checked++; }

int main()
{
    const int streams_count = 4, n = 1000;
    cudaStream_t streams[streams_count];
    Work work[streams_count];
    int *device[streams_count];
    for (int s = 0; s < streams_count; s++) {
        CHECK(cudaStreamCreate(&streams[s]));
        CHECK(cudaMallocHost(&work[s].host, n * sizeof(int)));
        CHECK(cudaMalloc(&device[s], n * sizeof(int)));
        for (int i = 0; i < n; i++) work[s].host[i] = i;
        work[s] = {s, n, 10 * (s + 1), work[s].host, 0, 0};
    }
    cudaEvent_t first_done;
    CHECK(cudaEventCreateWithFlags(&first_done, cudaEventDisableTiming));
    for (int s = 0; s < streams_count; s++) {
        CHECK(cudaMemcpyAsync(device[s], work[s].host, n * sizeof(int), cudaMemcpyHostToDevice, streams[s]));
        if (s == 1) CHECK(cudaStreamWaitEvent(streams[s], first_done, 0));
        increment<<<(n + 255) / 256, 256, 0, streams[s]>>>(device[s], n, 10 * (s + 1));
        CHECK(cudaMemcpyAsync(work[s].host, device[s], n * sizeof(int), cudaMemcpyDeviceToHost, streams[s]));
        if (s == 0) CHECK(cudaEventRecord(first_done, streams[s]));
        CHECK(cudaStreamAddCallback(streams[s], stream_done, &work[s], 0));
        CHECK(cudaLaunchHostFunc(streams[s], host_function, &work[s]));
    }
    CHECK(cudaDeviceSynchronize());
    int wrong = 0;
    for (int s = 0; s < streams_count; s++) {
        wrong += work[s].checked != 2 || !work[s].correct;
        wrong += cudaStreamQuery(streams[s]) != cudaSuccess;
        printf("stream %d: callbacks %d, result %s\n", s, work[s].checked, work[s].correct ? "correct" : "wrong");
    }
    wrong += cudaEventQuery(first_done) != cudaSuccess;
    for (int s = 0; s < streams_count; s++) {
        CHECK(cudaStreamDestroy(streams[s]));
        CHECK(cudaFreeHost(work[s].host));
        CHECK(cudaFree(device[s]));
    }
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}
