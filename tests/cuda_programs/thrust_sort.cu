// Thrust, as course exercises use it: device_vector transfers, sort, sort_by_key, reduce, transform with a functor,
// inclusive_scan and count_if, each compared with the host's result.
#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <algorithm>
#include <cstdio>

struct square {
    __host__ __device__ long long operator()(int x) const { return (long long)x * x; }
};
struct is_even {
    __host__ __device__ bool operator()(int x) const { return x % 2 == 0; }
};

int main()
{
    const int n = 3000;
    thrust::host_vector<int> h(n), keys(n), values(n);
    for (int i = 0; i < n; i++) { h[i] = (i * 7919) % 1009 - 500; keys[i] = (i * 31) % 97; values[i] = i; }
    thrust::device_vector<int> d = h;
    thrust::sort(d.begin(), d.end());
    thrust::host_vector<int> sorted = d, want = h;
    std::sort(want.begin(), want.end());
    int wrong = !(sorted == want);
    long long sum = thrust::reduce(d.begin(), d.end(), 0LL), want_sum = 0, want_squares = 0;
    for (int i = 0; i < n; i++) { want_sum += h[i]; want_squares += (long long)h[i] * h[i]; }
    thrust::device_vector<long long> squares(n);
    thrust::transform(d.begin(), d.end(), squares.begin(), square());
    long long square_sum = thrust::reduce(squares.begin(), squares.end());
    wrong += sum != want_sum || square_sum != want_squares;
    thrust::device_vector<int> scanned(n);
    thrust::inclusive_scan(d.begin(), d.end(), scanned.begin());
    int last = scanned[n - 1];
    wrong += last != (int)want_sum;
    int evens = thrust::count_if(d.begin(), d.end(), is_even()), want_evens = 0;
    for (int i = 0; i < n; i++) want_evens += h[i] % 2 == 0;
    wrong += evens != want_evens;
    thrust::device_vector<int> d_keys = keys, d_values = values;
    thrust::sort_by_key(d_keys.begin(), d_keys.end(), d_values.begin());
    thrust::host_vector<int> k_back = d_keys, v_back = d_values;
    for (int i = 1; i < n; i++) wrong += k_back[i - 1] > k_back[i];
    for (int i = 0; i < n; i++) wrong += keys[v_back[i]] != k_back[i];
    printf("min %d max %d sum %lld squares %lld evens %d\n", (int)sorted[0], (int)sorted[n - 1], sum, square_sum, evens);
    printf(wrong ? "FAIL\n" : "PASS\n");
    return wrong != 0;
}
