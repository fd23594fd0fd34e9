# Programs compiled against NVIDIA's nccl.h from the CUDA toolkit and linked against weft's
# libnccl.so.2, run under weftrun. Without the toolkit's header the test reports skipped.
find_path(WEFT_NVIDIA_NCCL_INCLUDE nccl.h PATHS /usr/local/cuda/include ${CUDAToolkit_INCLUDE_DIRS}
          NO_DEFAULT_PATH)
if(WEFT_NVIDIA_NCCL_INCLUDE AND EXISTS ${WEFT_NVIDIA_NCCL_INCLUDE}/cuda_runtime.h)
  add_executable(abi_allreduce abi/abi_allreduce.c)
  # Only the toolkit's include directory: the program must not see weft's nccl.h.
  set_target_properties(abi_allreduce PROPERTIES INCLUDE_DIRECTORIES "${WEFT_NVIDIA_NCCL_INCLUDE}"
                                                BUILD_RPATH "$<TARGET_FILE_DIR:nccl>")
  target_link_libraries(abi_allreduce PRIVATE $<TARGET_FILE:nccl>)
  add_dependencies(abi_allreduce nccl)
  foreach(n 1 2 4)
    add_test(NAME abi_allreduce_${n}ranks COMMAND weftrun -n ${n} $<TARGET_FILE:abi_allreduce>)
    set_tests_properties(abi_allreduce_${n}ranks PROPERTIES LABELS abi TIMEOUT 120
                         ENVIRONMENT "${WEFT_TEST_ENV}")
  endforeach()

  # Every collective once (broadcast, bcast, reduce, all-gather, reduce-scatter, all-to-all,
  # gather, scatter, grouped send/recv and collectives, pre-multiplied-sum all-reduce).
  add_executable(abi_collectives abi/abi_collectives.c)
  set_target_properties(abi_collectives PROPERTIES INCLUDE_DIRECTORIES "${WEFT_NVIDIA_NCCL_INCLUDE}"
                                                  BUILD_RPATH "$<TARGET_FILE_DIR:nccl>")
  target_link_libraries(abi_collectives PRIVATE $<TARGET_FILE:nccl>)
  add_dependencies(abi_collectives nccl)
  foreach(n 1 2 3 4)
    add_test(NAME abi_collectives_${n}ranks COMMAND weftrun -n ${n} $<TARGET_FILE:abi_collectives>)
    set_tests_properties(abi_collectives_${n}ranks PROPERTIES LABELS abi TIMEOUT 120
                         ENVIRONMENT "${WEFT_TEST_ENV}")
  endforeach()

  # ProcessGroupNCCL's call pattern (tests/abi/abi_process_group.cc), blocking and non-blocking,
  # with a clean shutdown or with a rank that skips an all-reduce and a watchdog that aborts.
  add_executable(abi_process_group abi/abi_process_group.cc)
  set_target_properties(abi_process_group PROPERTIES INCLUDE_DIRECTORIES "${WEFT_NVIDIA_NCCL_INCLUDE}"
                                                    BUILD_RPATH "$<TARGET_FILE_DIR:nccl>")
  target_link_libraries(abi_process_group PRIVATE $<TARGET_FILE:nccl> Threads::Threads)
  add_dependencies(abi_process_group nccl)
  foreach(n 2 3 4)
    foreach(mode blocking nonblocking)
      set(flags)
      if(mode STREQUAL "nonblocking")
        set(flags --nonblocking)
      endif()
      add_test(NAME abi_process_group_${n}ranks_${mode}
               COMMAND weftrun -n ${n} $<TARGET_FILE:abi_process_group> ${flags})
      add_test(NAME abi_process_group_${n}ranks_${mode}_fault
               COMMAND weftrun -n ${n} $<TARGET_FILE:abi_process_group> ${flags} --fault)
      # Alone even where others run two at a time (ctest -j 2): the fault case's watchdog
      # waits a set time for the skipped all-reduce.
      set_tests_properties(abi_process_group_${n}ranks_${mode} abi_process_group_${n}ranks_${mode}_fault
                           PROPERTIES LABELS abi TIMEOUT 120 ENVIRONMENT "${WEFT_TEST_ENV}" RUN_SERIAL TRUE)
    endforeach()
  endforeach()
else()
  foreach(name abi_allreduce abi_collectives abi_process_group)
    add_test(NAME ${name} COMMAND sh -c "echo 'skipped: NVIDIA nccl.h (CUDA toolkit) not found'; exit 77")
    set_tests_properties(${name} PROPERTIES LABELS abi SKIP_RETURN_CODE 77)
  endforeach()
endif()

# weft's libnccl.so.2 exports every ncclX/pncclX function NVIDIA's does (skipped, exit 77,
# without NVIDIA's library; the script documents the one internal name it ignores).
find_file(WEFT_NVIDIA_LIBNCCL libnccl.so.2 PATHS /usr/local/cuda/lib64 ${CUDAToolkit_LIBRARY_DIR} NO_DEFAULT_PATH)
if(NOT WEFT_NVIDIA_LIBNCCL)
  set(WEFT_NVIDIA_LIBNCCL /usr/local/cuda/lib64/libnccl.so.2)  # absent: the script reports skipped
endif()
add_test(NAME abi_exported_symbols
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/exported_symbols_test.sh $<TARGET_FILE:nccl> ${WEFT_NVIDIA_LIBNCCL})
set_tests_properties(abi_exported_symbols PROPERTIES LABELS abi TIMEOUT 60 SKIP_RETURN_CODE 77)
