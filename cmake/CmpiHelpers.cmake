# Shared build helpers.

set(CMPI_WARNINGS -Wall -Wextra -Wno-unused-parameter)

# The MPI launcher used by tests and scripts. Running as root (containers, CI)
# needs OpenMPI's explicit consent; --oversubscribe lets N ranks share 2 cores.
set(CMPI_MPIEXEC ${MPIEXEC_EXECUTABLE})
set(CMPI_MPIEXEC_FLAGS --oversubscribe --bind-to none)

# cmpi_torch_pch(target): reuse one precompiled <torch/torch.h> for every
# torch-facing target (built once by cmpi_torch_pch_host in models/).
function(cmpi_torch_pch target)
  if(TARGET cmpi_torch_pch_host AND NOT target STREQUAL cmpi_torch_pch_host)
    target_precompile_headers(${target} REUSE_FROM cmpi_torch_pch_host)
  else()
    target_precompile_headers(${target} PRIVATE <torch/torch.h>)
  endif()
endfunction()

# cmpi_mpi_test(NAME name TARGET exe RANKS n [ARGS ...] [TIMEOUT s])
# Runs a test executable under mpirun with n ranks; a hang fails by timeout.
function(cmpi_mpi_test)
  cmake_parse_arguments(T "" "NAME;TARGET;RANKS;TIMEOUT" "ARGS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME}
           COMMAND ${CMPI_MPIEXEC} ${CMPI_MPIEXEC_FLAGS} -np ${T_RANKS}
                   $<TARGET_FILE:${T_TARGET}> ${T_ARGS})
  set_tests_properties(${T_NAME} PROPERTIES
    TIMEOUT ${T_TIMEOUT}
    PROCESSORS ${T_RANKS}
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMP_NUM_THREADS=1;OMPI_MCA_rmaps_base_oversubscribe=1")
endfunction()
