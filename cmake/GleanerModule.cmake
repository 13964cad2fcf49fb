# gleaner_module(NAME <name> KIND <types|decision|io|root> [DIR <subfolder>] [LIBS <target>...]
#                [EXCLUDE <regex>...])
# KIND is what the module may link (test/layering/include_edges.py enforces it over LIBS,
# transitively): types and decision modules do no I/O and link no I/O module.
# One static library gleaner_<name>, built from every .cc under the calling folder (or its
# subfolder DIR) except main.cc files (those belong to the executables). Globbing keeps
# module CMakeLists free of file lists; CONFIGURE_DEPENDS picks up new files.
# LIBS are the module's allowed edges: the gleaner_* targets among them are the modules
# whose headers it may include. ctest include_layering reads these calls and fails on any
# #include that crosses another edge (test/layering/include_edges.py).
function(gleaner_module)
  cmake_parse_arguments(M "" "NAME;DIR;KIND" "LIBS;EXCLUDE" ${ARGN})
  if(NOT M_KIND MATCHES "^(types|decision|io|root)$")
    message(FATAL_ERROR "gleaner_module(${M_NAME}): KIND types|decision|io|root is required")
  endif()
  set(dir ${CMAKE_CURRENT_SOURCE_DIR})
  if(M_DIR)
    set(dir ${dir}/${M_DIR})
  endif()
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "/main\\.cc$")
  foreach(pattern IN LISTS M_EXCLUDE)
    list(FILTER srcs EXCLUDE REGEX "${pattern}")
  endforeach()
  if(NOT srcs)
    # A module with headers only (or not written yet) still links like the others.
    add_library(gleaner_${M_NAME} INTERFACE)
    target_link_libraries(gleaner_${M_NAME} INTERFACE ${M_LIBS})
    return()
  endif()
  add_library(gleaner_${M_NAME} STATIC ${srcs})
  target_link_libraries(gleaner_${M_NAME} PUBLIC ${M_LIBS})
  set_target_properties(gleaner_${M_NAME} PROPERTIES UNITY_BUILD ${GLEANER_UNITY_BUILD})
endfunction()

# gleaner_module_group(NAME <name> PARTS <module>...)
# gleaner_<name>: every part of a folder split into per-subfolder modules, for the tests
# and benchmarks that exercise all of it.
function(gleaner_module_group)
  cmake_parse_arguments(G "" "NAME" "PARTS" ${ARGN})
  add_library(gleaner_${G_NAME} INTERFACE)
  foreach(part IN LISTS G_PARTS)
    target_link_libraries(gleaner_${G_NAME} INTERFACE gleaner_${part})
  endforeach()
endfunction()

# gleaner_test(NAME <name> DIR <dir under test/> LIBS <targets>... [LABELS <labels>...] [SERIAL])
# One GoogleTest binary per test folder; each TEST becomes its own ctest entry.
function(gleaner_test)
  cmake_parse_arguments(T "SERIAL" "NAME;DIR" "LIBS;LABELS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${T_DIR}/*_test.cc)
  if(NOT srcs)
    return()
  endif()
  add_executable(${T_NAME} ${srcs})
  # Test code itself needs no -O3: -O1 compiles it in 25-30% less time. The code under test
  # is in the libraries, optimised as configured.
  target_compile_options(${T_NAME} PRIVATE $<$<CONFIG:Release,RelWithDebInfo>:-O1>)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gmock GTest::gtest_main)
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/test
                                              UNITY_BUILD ${GLEANER_UNITY_TESTS})
  target_compile_definitions(${T_NAME} PRIVATE
    GLEANER_SOURCE_DIR="${PROJECT_SOURCE_DIR}" GLEANER_BINARY_DIR="${CMAKE_BINARY_DIR}")
  if(NOT T_LABELS AND GLEANER_SANITIZE)
    # `make test-sanitize`: the unit binaries built with ASan and UBSan (one label: a list
    # would not survive gtest_discover_tests' PROPERTIES).
    set(T_LABELS sanitize)
  elseif(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  # SERIAL: tests that measure real CPU time must not share the 2 cores with others.
  set(extra)
  if(T_SERIAL)
    set(extra RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT 300 ${extra})
endfunction()
