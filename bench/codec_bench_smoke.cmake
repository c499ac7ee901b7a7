# Smoke test of `cmpi-bench codec --quick` (run with cmake -P): it must exit 0,
# write the CSV columns docs/benchmarks.md documents, give every codec the
# registry knows at least one row, and keep the lossless reference rows.
# Inputs: -DBENCH=path/to/cmpi-bench -DWORK_DIR=scratch directory.
if(NOT BENCH OR NOT WORK_DIR)
  message(FATAL_ERROR "usage: cmake -DBENCH=... -DWORK_DIR=... -P codec_bench_smoke.cmake")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(csv "${WORK_DIR}/bench_codec.csv")

execute_process(COMMAND "${BENCH}" codec --quick --csv "${csv}"
                WORKING_DIRECTORY "${WORK_DIR}"
                RESULT_VARIABLE exit_code OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT exit_code EQUAL 0)
  message(FATAL_ERROR "cmpi-bench codec --quick exited with ${exit_code}:\n${err}")
endif()
if(NOT EXISTS "${csv}")
  message(FATAL_ERROR "cmpi-bench codec --quick wrote no ${csv}")
endif()

file(STRINGS "${csv}" lines)
list(GET lines 0 header)
set(expected_header "dataset,codec,spec,kind,lossless,elements,ratio,bits_per_value,encode_gbps_1t,decode_gbps_1t,encode_gbps_mt,decode_gbps_mt,threads,parallelism,clock_1t,rel_rmse,max_abs_error")
if(NOT header STREQUAL expected_header)
  message(FATAL_ERROR "CSV header changed (update docs/benchmarks.md and this test if meant):\n"
                      "  got      ${header}\n  expected ${expected_header}")
endif()

# Every codec the run announced ("# codecs: a, b, c") has a row on gaussian data.
string(REGEX MATCH "# codecs: ([^\n]*)" codec_line "${out}")
if(NOT codec_line)
  message(FATAL_ERROR "the run did not list its codecs")
endif()
string(REPLACE ", " ";" codecs "${CMAKE_MATCH_1}")
foreach(codec IN LISTS codecs)
  set(found FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "^gaussian,${codec},")
      set(found TRUE)
    endif()
  endforeach()
  if(NOT found)
    message(FATAL_ERROR "no CSV row for codec '${codec}' on the gaussian dataset")
  endif()
endforeach()

# Fixed points: identity is lossless with ratio just under 1 (the payload
# header), memcpy and the compressors are present with zero error.
set(required
    "^gaussian,identity,identity,codec,1,262144,0\\.99[0-9]*,"
    "^gaussian,memcpy,memcpy,reference,1,262144,1,32,.*,wall,0,0$"
    "^gaussian,zstd,zstd:level=1,reference,1,"
    "^gaussian,zstd,zstd:level=3,reference,1,"
    "^gaussian,lz4,lz4,reference,1,"
    "^gaussian,blosc,\"?blosc:lz4\\+shuffle,"
    "^gaussian,blosc,\"?blosc:lz4\\+bitshuffle,")
foreach(pattern IN LISTS required)
  set(found FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "${pattern}")
      set(found TRUE)
    endif()
  endforeach()
  if(NOT found)
    message(FATAL_ERROR "no CSV row matches ${pattern}")
  endif()
endforeach()
message("bench smoke test: ${csv} has the expected columns and rows")
