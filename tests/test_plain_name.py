"""plain_name: the unqualified name of an Itanium-mangled kernel, as c++filt (binutils) demangles it."""
import pytest

from emulator.runtime.names import plain_name


@pytest.mark.parametrize("mangled, plain", [
    ("_Z6vecaddPKfS0_Pfi", "vecadd"),                                # vecadd(float const*, float const*, float*, int)
    ("_ZN7kernels4vaddB2v1B3abcE5ArrayIfLi1EEi", "vadd"),            # kernels::vadd[abi:v1][abi:abc](Array<float, 1>, int)
    ("_ZN9__gnu_cxx4vaddB5cxx11Ev", "vadd"),                         # __gnu_cxx::vadd[abi:cxx11]()
    ("_Z3fooIiEvT_", "foo"),                                         # void foo<int>(int)
    ("_ZNSt6vector4sizeEv", "size"),                                 # std::vector::size()
    ("_ZNK3Foo3getEv", "get"),                                       # Foo::get() const
    ("_ZL6helperi", "helper"),                                       # helper(int)
    ("_ZN2ns5inner6kernelEPf", "kernel"),                            # ns::inner::kernel(float*)
    ("_ZN3ns15ArrayIfLi1EE3getEv", "get"),                           # ns1::Array<float, 1>::get()
    ("vecadd", "vecadd"),
    ("_Zxyz", "_Zxyz"),
])
def test_plain_name_is_the_unqualified_name_cxxfilt_shows(mangled, plain):
    assert plain_name(mangled) == plain


def test_numba_kernel_names_with_long_abi_tags_resolve():
    mangled = ("_ZN8__main__4vaddB2v1B96cw51cXTLSUwv1sCUt9Uw1VEw0NRRQPKzLTg4gaGKFsG2oMQGEYakJSQB1PQBk0Bynm21OizQ1K0U"
               "oIGvDpQE8oxrNQE_3dE5ArrayIfLi1E1C7mutable7alignedE")
    assert plain_name(mangled) == "vadd"
