# The layering of kvbench's sources, checked on every #include "..." (and on CUDA's headers):
# each file belongs to one floor and may include its own floor and those below it, never one
# above. Run by ctest (repo.layers); exits non-zero naming every FILE:LINE that reaches up.
#
#   cmake -DROOT=<source tree> -P cmake/check_layers.cmake
#
# Floors, bottom up (a file's floor is the first pattern its path matches):
#   types      src/core/types.*: the enums every floor shares
#   kernels    kernels/: device code, launchers and the pure launch plans
#   reference  reference/: the CPU reference, independent of the kernels
#   core       src/core/: pure C++ without CUDA, any kernel header or any operation: it reaches
#              operations only through the registry's interface, core/operation.hpp
#   op         each operation's pure part (src/ops/<op>/operation*, params*) and the registry
#              (src/ops/registry.cpp): core and other operations' pure parts only; they build
#              into kvbench_core, which links no kernel target
#   launch     src/ops/launch.*, src/ops/<op>/launch*: an operation's kernel arguments and plan,
#              and those arguments as the plugin ABI's (include/kvbench/)
#   runtime    src/runtime/: the CUDA host harness (timing, buffers, the case runner)
#   stages     src/ops/stages.*, src/ops/<op>/stages*: each operation's run stages
#   plugin     src/plugin/: the plugin loader over include/kvbench/ (and core/text.hpp, the
#              header-only UTF-8 check it shares with the gate's reports; it links no core)
#   cli        src/cli/, src/main.cpp: the command line, may include any floor
cmake_minimum_required(VERSION 3.24)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_layers.cmake")
endif()

# An operation's files are named for their floor: operation*, params* (core), launch* (launch),
# stages* (stages), e.g. operation_slots.cpp.
set(OPS_PURE "^ops/[a-z0-9_]+/(operation|params)(_[a-z0-9_]+)?\\.hpp$|^ops/operation_common\\.hpp$")
set(OPS_LAUNCH "^ops/launch\\.hpp$|^ops/[a-z0-9_]+/launch(_[a-z0-9_]+)?\\.hpp$")
set(OPS_STAGES "^ops/[a-z0-9_]+/stages(_[a-z0-9_]+)?\\.hpp$|^ops/stages\\.hpp$")
set(KERNEL_PLANS "kernels/[a-z0-9_]+/(plan|[a-z0-9_]+)\\.hpp$")

# The floor of a path relative to ROOT ("" when unchecked).
function(floor_of path out)
  if(path MATCHES "^src/core/types\\.")
    set(f types)
  elseif(path MATCHES "^kernels/")
    set(f kernels)
  elseif(path MATCHES "^reference/")
    set(f reference)
  elseif(path MATCHES "^src/core/")
    set(f core)
  elseif(path MATCHES "^src/ops/(registry|operation_common)\\."
         OR path MATCHES "^src/ops/[a-z0-9_]+/(operation|params)(_[a-z0-9_]+)?\\.")
    set(f op)
  elseif(path MATCHES "^src/ops/launch\\." OR path MATCHES "^src/ops/[a-z0-9_]+/launch(_[a-z0-9_]+)?\\.")
    set(f launch)
  elseif(path MATCHES "^src/runtime/")
    set(f runtime)
  elseif(path MATCHES "^src/ops/stages\\." OR path MATCHES "^src/ops/[a-z0-9_]+/stages(_[a-z0-9_]+)?\\.")
    set(f stages)
  elseif(path MATCHES "^src/plugin/")
    set(f plugin)
  elseif(path MATCHES "^src/cli/" OR path STREQUAL "src/main.cpp")
    set(f cli)
  elseif(path MATCHES "^src/ops/")
    set(f unplaced)  # a file of src/ops/ that names no floor: refused below
  else()
    set(f "")
  endif()
  set(${out} ${f} PARENT_SCOPE)
endfunction()

# Whether floor `f` may include `inc` (as written between the quotes).
function(allowed f inc out)
  set(ok FALSE)
  if(inc STREQUAL "core/types.hpp")
    set(ok TRUE)  # every floor
  elseif(f STREQUAL "types")
    set(ok FALSE)
  elseif(f STREQUAL "kernels")
    if(inc MATCHES "^kernels/")
      set(ok TRUE)
    endif()
  elseif(f STREQUAL "reference")
    if(inc MATCHES "^reference/")
      set(ok TRUE)
    endif()
  elseif(f STREQUAL "core")
    if(inc MATCHES "^core/" OR inc STREQUAL "kvbench_version.hpp")
      set(ok TRUE)
    endif()
  elseif(f STREQUAL "op")
    if(inc MATCHES "^core/" OR inc MATCHES "${OPS_PURE}")
      set(ok TRUE)
    endif()
  elseif(f STREQUAL "launch")
    if(inc MATCHES "^core/" OR inc MATCHES "${OPS_PURE}" OR inc MATCHES "${OPS_LAUNCH}"
       OR inc MATCHES "${KERNEL_PLANS}" OR inc MATCHES "^kvbench/")
      set(ok TRUE)
    endif()
  elseif(f STREQUAL "runtime")
    if(inc MATCHES "^(core|runtime|kernels|reference)/" OR inc MATCHES "${OPS_PURE}"
       OR inc MATCHES "${OPS_LAUNCH}" OR inc STREQUAL "kvbench_version.hpp")
      set(ok TRUE)
    endif()
  elseif(f STREQUAL "stages")
    if(inc MATCHES "^(core|runtime|kernels|reference)/" OR inc MATCHES "${OPS_PURE}"
       OR inc MATCHES "${OPS_LAUNCH}" OR inc MATCHES "${OPS_STAGES}")
      set(ok TRUE)
    endif()
  elseif(f STREQUAL "plugin")
    if(inc MATCHES "^(plugin|kvbench)/" OR inc STREQUAL "core/text.hpp")
      set(ok TRUE)
    endif()
  elseif(f STREQUAL "cli")
    set(ok TRUE)
  endif()
  set(${out} ${ok} PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/kernels/* ${ROOT}/reference/* ${ROOT}/src/*)
list(SORT files)
set(problems 0)
set(checked 0)
foreach(path IN LISTS files)
  if(NOT path MATCHES "\\.(h|hpp|cpp|cu|cuh|inc)$")
    continue()
  endif()
  floor_of(${path} f)
  if(f STREQUAL "")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  if(f STREQUAL "unplaced")
    message("${path}: a file of an operation's folder is named for its floor: operation*, "
            "params*, launch* or stages* (src/ops/ itself: registry.cpp, launch.*, stages.*)")
    math(EXPR problems "${problems} + 1")
    continue()
  endif()
  file(STRINGS ${ROOT}/${path} lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*([<\"])([^\">]+)[\">]")
      continue()
    endif()
    set(quote "${CMAKE_MATCH_1}")
    set(inc "${CMAKE_MATCH_2}")
    if(quote STREQUAL "<")
      # CUDA's headers: never in core (nor in the floors below it that are plain C++).
      if(inc MATCHES "^(cuda|cuda_runtime|cuda_runtime_api|cuda_bf16|cuda_fp16|cuda_fp8)\\.h$"
         AND f MATCHES "^(types|core|op|reference)$")
        message("${path}:${n}: includes <${inc}>; the ${f} floor is plain C++")
        math(EXPR problems "${problems} + 1")
      endif()
      continue()
    endif()
    get_filename_component(dir ${path} DIRECTORY)
    if(EXISTS ${ROOT}/${dir}/${inc} AND NOT inc MATCHES "/")
      continue()  # a file beside it (kernels' .inc tables)
    endif()
    allowed(${f} ${inc} ok)
    if(NOT ok)
      message("${path}:${n}: includes \"${inc}\", above the ${f} floor")
      math(EXPR problems "${problems} + 1")
    endif()
  endforeach()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no source file found under ${ROOT}")
endif()
if(problems GREATER 0)
  message(FATAL_ERROR "${problems} include(s) against the layering (cmake/check_layers.cmake)")
endif()
message("${checked} files, every include at or below its floor")
