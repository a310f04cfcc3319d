"""What a launch of SASS code puts in the constant banks its listing reads: launch dimensions, the stack,
parameters (as the listing's architecture lays them out) and the module's __constant__ banks."""
from __future__ import annotations

from typing import Dict

import numpy as np

from emulator.base.errors import LaunchError
from emulator.frontend.sass.program import SassProgram
from emulator.machine.sass import ADDRESS_HIGH, BANK_BYTES
from emulator.machine.specials import DRIVER_ENVIRONMENT
from emulator.memory import LOCAL_WINDOW

#: constant banks c[0x0] .. c[0x11], as cuobjdump numbers them (sm_70 on; Fermi's 16 fit inside)
CONSTANT_BANKS = 18
#: sm_90 bank 0: the launch's dynamic shared-memory size and the shared memory reserved below user data
DYNAMIC_SHARED_OFFSET, SHARED_RESERVE_OFFSET = 0x2C, 0x114
#: sm_90 bank 0: %envreg0..31, one word each (a cooperative launch's grid-sync workspace is envreg1:envreg2)
ENVIRONMENT_OFFSET = 0x40
#: sm_90 bank 0: the generic address of the local window, which code adds to the stack pointer to pass a local
#: variable's address (printf's argument buffer)
LOCAL_WINDOW_OFFSET = 0x20


def _put(bank: np.ndarray, offset: int, value: int, size: int) -> None:
    bank[offset:offset + size] = np.frombuffer(int(value).to_bytes(size, "little"), dtype=np.uint8)


def constant_banks(program: SassProgram, grid, block, dynamic_shared: int, parameters: np.ndarray,
                   module_banks: Dict[int, np.ndarray], environment: Dict[int, int]) -> Dict[int, np.ndarray]:
    """A launch's constant banks as byte arrays: bank 0 (launch dimensions, stack, parameters, on sm_90 the
    environment registers) and the module's __constant__ banks the program reads."""
    arch = program.arch
    driver = np.zeros(BANK_BYTES, dtype=np.uint8)
    banks = {0: driver}
    for axis in range(3):
        _put(driver, arch.ntid_offset + 4 * axis, block[axis], 4)
        _put(driver, arch.nctaid_offset + 4 * axis, grid[axis], 4)
    if arch.global_descriptor is not None:
        _put(driver, DYNAMIC_SHARED_OFFSET, dynamic_shared, 4)
        _put(driver, SHARED_RESERVE_OFFSET, arch.shared_base, 4)
        _put(driver, LOCAL_WINDOW_OFFSET, LOCAL_WINDOW, 8)
        for number, value in {**DRIVER_ENVIRONMENT, **environment}.items():
            _put(driver, ENVIRONMENT_OFFSET + 4 * number, value, 4)
    stack_bank, stack_offset = arch.stack
    banks.setdefault(stack_bank, np.zeros(BANK_BYTES, dtype=np.uint8))
    _put(banks[stack_bank], stack_offset, program.local_bytes, 4)
    for buffer_offset, buffer_size, bank_offset, bank_size in program.bank_params:
        raw = parameters[buffer_offset:buffer_offset + buffer_size]
        if bank_size < buffer_size:
            pointer = int(raw.view(np.uint64)[0])
            if pointer and not ADDRESS_HIGH <= pointer < ADDRESS_HIGH + (1 << 32):
                raise LaunchError("CUDA_ERROR_INVALID_VALUE",
                                  f"pointer {pointer:#x} does not fit the 32-bit addresses of {arch.name} code")
            _put(driver, bank_offset, pointer - ADDRESS_HIGH if pointer else 0, bank_size)
        else:
            driver[bank_offset:bank_offset + bank_size] = raw
    for number in program.user_banks:
        banks[number] = module_banks.get(number, np.zeros(BANK_BYTES, dtype=np.uint8))
    return banks
