# Smoke test of `cmpi-bench collective --quick` on 2 ranks over loopback (run
# with cmake -P): it must exit 0, write the CSV columns
# docs/emulated_cluster.md documents, give every benchmarked op a plain-MPI
# row and a raw-Communicator row, and the raw row must reproduce the plain
# MPI result exactly.
# Inputs: -DMPIEXEC=mpirun -DMPIEXEC_FLAGS="..." -DBENCH=path/to/cmpi-bench
#         -DWORK_DIR=scratch directory.
if(NOT MPIEXEC OR NOT BENCH OR NOT WORK_DIR)
  message(FATAL_ERROR "usage: cmake -DMPIEXEC=... -DBENCH=... -DWORK_DIR=... "
                      "-P collective_bench_smoke.cmake")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(csv "${WORK_DIR}/bench_collective.csv")
# The flags arrive as a CMake list or a space-separated string.
string(REPLACE ";" " " flags "${MPIEXEC_FLAGS}")
separate_arguments(flags UNIX_COMMAND "${flags}")

execute_process(COMMAND "${MPIEXEC}" ${flags} -np 2 "${BENCH}" collective --quick --csv "${csv}"
                WORKING_DIRECTORY "${WORK_DIR}" TIMEOUT 500
                RESULT_VARIABLE exit_code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT exit_code EQUAL 0)
  message(FATAL_ERROR "cmpi-bench collective --quick exited with ${exit_code}:\n${err}")
endif()
if(NOT EXISTS "${csv}")
  message(FATAL_ERROR "cmpi-bench collective --quick wrote no ${csv}")
endif()

file(STRINGS "${csv}" lines)
list(GET lines 0 header)
set(expected_header "op,size_bytes,ranks,variant,compressed,iterations,median_s,min_s,algbw_MBps,wire_bytes_per_rank,ratio,speedup_vs_mpi,rel_error,encode_s,decode_s,codec_s,link_bits_per_s,wire_bound_s,bound_ratio,data")
if(NOT header STREQUAL expected_header)
  message(FATAL_ERROR "CSV header changed (update docs/emulated_cluster.md and this test if "
                      "meant):\n  got      ${header}\n  expected ${expected_header}")
endif()

foreach(op allreduce allgather reduce_scatter alltoall broadcast p2p)
  foreach(variant mpi none)
    set(found FALSE)
    foreach(line IN LISTS lines)
      # The raw Communicator path is the MPI call itself: zero error, never compressed.
      if(line MATCHES "^${op},65536,2,${variant},0,[1-9][0-9]*,[0-9.e+-]+,[0-9.e+-]+,[0-9.e+-]+,[0-9]+,1,[0-9.e+-]+,0,")
        set(found TRUE)
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "no sane CSV row for ${op} 64KiB variant ${variant} on 2 ranks")
    endif()
  endforeach()
endforeach()
