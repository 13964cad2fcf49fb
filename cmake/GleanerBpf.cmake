# eBPF build support: kernel-side programs compiled by clang -target bpf, vmlinux.h
# generated from the build host's BTF (into the build tree, never committed), and libbpf
# skeletons from `bpftool gen skeleton`.
#
# gleaner_bpf(TARGET <library> SOURCES <x.bpf.c>...)
#   Builds each source into <build>/bpf/<x>.bpf.o and <build>/bpf/<x>.skel.h (skeleton
#   named gleaner_<x>), adds that directory to TARGET's include path, links TARGET
#   against libbpf (pkg-config) and defines GLEANER_HAVE_BPF=1 on it. When anything is
#   missing (GLEANER_BPF off, no clang, no bpftool, no BTF, no libbpf) it defines
#   GLEANER_HAVE_BPF=0 and GLEANER_BPF_UNAVAILABLE_REASON="<why>" instead, says why at
#   configure time, and TARGET builds its stub.
set(GLEANER_BTF_FILE "/sys/kernel/btf/vmlinux" CACHE FILEPATH
    "Kernel BTF that vmlinux.h is generated from")

function(_gleaner_bpf_arch out)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|i.86")
    set(${out} x86 PARENT_SCOPE)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
    set(${out} arm64 PARENT_SCOPE)
  else()
    set(${out} ${CMAKE_SYSTEM_PROCESSOR} PARENT_SCOPE)
  endif()
endfunction()

function(gleaner_bpf)
  cmake_parse_arguments(B "" "TARGET" "SOURCES" ${ARGN})
  set(reason "")
  if(NOT GLEANER_BPF)
    set(reason "disabled (-DGLEANER_BPF=OFF)")
  endif()
  if(NOT reason)
    find_program(GLEANER_BPF_CLANG NAMES clang clang-16 clang-15 clang-14)
    find_program(GLEANER_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin /usr/local/sbin)
    pkg_check_modules(LIBBPF QUIET IMPORTED_TARGET libbpf)
    if(NOT GLEANER_BPF_CLANG)
      set(reason "clang not found")
    elseif(NOT GLEANER_BPFTOOL)
      set(reason "bpftool not found")
    elseif(NOT EXISTS "${GLEANER_BTF_FILE}")
      set(reason "no kernel BTF at ${GLEANER_BTF_FILE}")
    elseif(NOT LIBBPF_FOUND)
      set(reason "libbpf not found by pkg-config (libbpf-dev)")
    endif()
  endif()
  if(reason)
    message(STATUS "gleaner: eBPF probes OFF: ${reason}; the agent builds without them")
    target_compile_definitions(${B_TARGET} PRIVATE GLEANER_HAVE_BPF=0
                               GLEANER_BPF_UNAVAILABLE_REASON="built without eBPF: ${reason}")
    return()
  endif()
  message(STATUS "gleaner: eBPF probes ON (clang ${GLEANER_BPF_CLANG}, bpftool "
                 "${GLEANER_BPFTOOL}, libbpf ${LIBBPF_VERSION}, BTF ${GLEANER_BTF_FILE})")

  set(out ${PROJECT_BINARY_DIR}/bpf)
  file(MAKE_DIRECTORY ${out})
  add_custom_command(
    OUTPUT ${out}/vmlinux.h
    COMMAND sh -c "'${GLEANER_BPFTOOL}' btf dump file '${GLEANER_BTF_FILE}' format c > vmlinux.h.tmp"
    COMMAND ${CMAKE_COMMAND} -E rename vmlinux.h.tmp vmlinux.h
    WORKING_DIRECTORY ${out}
    COMMENT "Generating vmlinux.h from ${GLEANER_BTF_FILE}"
    VERBATIM)
  _gleaner_bpf_arch(arch)
  set(skeletons)
  foreach(src IN LISTS B_SOURCES)
    get_filename_component(src_abs ${src} ABSOLUTE BASE_DIR ${PROJECT_SOURCE_DIR})
    get_filename_component(src_dir ${src_abs} DIRECTORY)
    get_filename_component(name ${src_abs} NAME)
    string(REGEX REPLACE "\\.bpf\\.c$" "" name ${name})
    file(GLOB headers ${src_dir}/*.h)
    add_custom_command(
      OUTPUT ${out}/${name}.bpf.o
      COMMAND ${GLEANER_BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${arch}
              -I${out} -I${src_dir} -c ${src_abs} -o ${out}/${name}.bpf.o
      DEPENDS ${src_abs} ${headers} ${out}/vmlinux.h
      COMMENT "Compiling BPF program ${name}.bpf.c"
      VERBATIM)
    add_custom_command(
      OUTPUT ${out}/${name}.skel.h
      COMMAND sh -c "'${GLEANER_BPFTOOL}' gen skeleton '${name}.bpf.o' name 'gleaner_${name}' > '${name}.skel.h.tmp'"
      COMMAND ${CMAKE_COMMAND} -E rename ${name}.skel.h.tmp ${name}.skel.h
      DEPENDS ${out}/${name}.bpf.o
      WORKING_DIRECTORY ${out}
      COMMENT "Generating BPF skeleton ${name}.skel.h"
      VERBATIM)
    list(APPEND skeletons ${out}/${name}.skel.h)
  endforeach()
  add_custom_target(${B_TARGET}_bpf DEPENDS ${skeletons})
  add_dependencies(${B_TARGET} ${B_TARGET}_bpf)
  # SYSTEM: generated C headers are not held to the project's C++ warning flags.
  target_include_directories(${B_TARGET} SYSTEM PRIVATE ${out})
  target_link_libraries(${B_TARGET} PRIVATE PkgConfig::LIBBPF)
  target_compile_definitions(${B_TARGET} PRIVATE GLEANER_HAVE_BPF=1)
endfunction()
