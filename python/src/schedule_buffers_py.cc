// Python bindings of the buffer primitives of tir.Schedule: cache_read and cache_write, storage
// scopes and alignment (kiln/schedule/cache_read_write.h, buffer_scope.h), and layouts:
// transform_layout and its tir.IndexMap (layout_transformation.h, index_map.h).
#include "kiln/schedule/buffer_scope.h"
#include "kiln/schedule/cache_read_write.h"
#include "kiln/schedule/index_map.h"
#include "kiln/schedule/layout_transformation.h"
#include "schedule_py.h"

namespace py = pybind11;

namespace kiln::python {

using namespace kiln::schedule;
using ir::Ref;

namespace {

// transform_layout's buffer: ("read"|"write", index), given as a tuple or list, or a name.
BufferSpec to_buffer_spec(py::handle obj) {
  const char* api = "Schedule.transform_layout";
  const char* expected = "(\"read\" or \"write\", index) or a buffer name (str)";
  if (py::isinstance<py::str>(obj)) return obj.cast<std::string>();
  if ((py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) && py::len(obj) == 2) {
    py::sequence pair = py::reinterpret_borrow<py::sequence>(obj);
    if (py::isinstance<py::str>(pair[0])) {
      std::string kind = pair[0].cast<std::string>();
      user_check(kind == "read" || kind == "write")
          << api << ": buffer must be " << expected << ", found (\"" << kind << "\", …)";
      int64_t index = to_int(pair[1], api, "the index of buffer", 0);
      return std::make_pair(kind == "read" ? BufferIndexType::kRead : BufferIndexType::kWrite,
                            index);
    }
  }
  raise_type_error(api, "buffer", expected, obj);
}

// An IndexMap from a Python callable: its parameters become the initial indices.
IndexMap index_map_from_func(py::handle func) {
  const char* api = "IndexMap.from_func";
  if (!PyCallable_Check(func.ptr())) raise_type_error(api, "func", "a function", func);
  py::module_ inspect = py::module_::import("inspect");
  py::object signature = inspect.attr("signature")(func);
  py::object positional = inspect.attr("Parameter").attr("POSITIONAL_OR_KEYWORD");
  std::vector<Ref<ir::Var>> vars;
  py::tuple args(py::len(signature.attr("parameters")));
  for (py::handle param : signature.attr("parameters").attr("values")()) {
    py::object kind = param.attr("kind");
    user_check(kind.equal(positional))
        << api << ": parameter " << py::str(param).cast<std::string>()
        << " is not a plain positional parameter; write lambda i, j: […]";
    vars.push_back(ir::make_var(param.attr("name").cast<std::string>()));
    args[vars.size() - 1] = py::cast(vars.back());
  }
  py::object result = func(*args);
  std::vector<ir::Expr> finals;
  if (py::isinstance<py::list>(result) || py::isinstance<py::tuple>(result)) {
    for (py::handle item : result) {
      finals.push_back(to_expr(item, api, entry_name("the result", finals.size()).c_str()));
    }
  } else {
    finals.push_back(to_expr(result, api, "the result"));
  }
  return IndexMap(std::move(vars), std::move(finals));
}

// A list of expressions (a final index list, indices to map).
std::vector<ir::Expr> to_expr_list(py::handle obj, const char* api, const char* param) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
    raise_type_error(api, param, "a list of expressions", obj);
  }
  std::vector<ir::Expr> exprs;
  for (py::handle item : obj) {
    exprs.push_back(to_expr(item, api, entry_name(param, exprs.size()).c_str()));
  }
  return exprs;
}

// transform_layout's index map: an IndexMap, a callable, or the text form traces print.
IndexMap to_index_map(py::handle obj) {
  if (py::isinstance<IndexMap>(obj)) return obj.cast<IndexMap>();
  if (py::isinstance<py::str>(obj)) return IndexMap::parse(obj.cast<std::string>());
  if (PyCallable_Check(obj.ptr())) return index_map_from_func(obj);
  raise_type_error("Schedule.transform_layout", "index_map",
                   "an IndexMap, a function such as lambda i, j: [i // 16, j, i % 16], or its "
                   "text",
                   obj);
}

}  // namespace

void bind_index_map(py::module_& m) {
  py::class_<IndexMap>(m, "IndexMap", R"doc(A function from a buffer's indices to new indices.

transform_layout applies it to a buffer. It is written with +, -, *, // and % of its initial
indices and integer constants, and prints as the Python lambda it reads back from
(``lambda i, j: [i // 16, j, i % 16]``), which is how traces store it.

Example:
    index_map = tir.IndexMap.from_func(lambda i, j: [i // 16, j, i % 16])
    sch.transform_layout("C", ("read", 1), index_map))doc")
      .def(py::init([](py::handle initial, py::handle finals) {
             const char* api = "IndexMap";
             if (!py::isinstance<py::list>(initial) && !py::isinstance<py::tuple>(initial)) {
               raise_type_error(api, "initial_indices", "a list of tir.Var", initial);
             }
             std::vector<Ref<ir::Var>> vars;
             for (py::handle item : initial) {
               vars.push_back(to_node<ir::Var>(
                   item, api, entry_name("initial_indices", vars.size()).c_str(), "a tir.Var"));
             }
             return IndexMap(std::move(vars), to_expr_list(finals, api, "final_indices"));
           }),
           py::arg("initial_indices"), py::arg("final_indices"),
           R"doc(An index map from its variables and the new indices written with them.

Args:
    initial_indices (list of tir.Var): one variable per dimension of the buffer.
    final_indices (list of PrimExpr or int): the new indices.

Raises:
    KilnTypeError: an initial index is not a tir.Var or a final index is not an expression.
    KilnValueError: the initial indices repeat a variable, or a final index uses anything but
        them, constants and + - * // %.)doc")
      .def_static(
          "from_func", &index_map_from_func, py::arg("func"),
          R"doc(The index map of a Python function, e.g. ``lambda i, j: [i // 16, j, i % 16]``.

func is called once with one tir.Var per parameter (named after the parameters) and returns
the new indices (a list or tuple, or one expression).

Raises:
    KilnTypeError: func is not callable, or returns something that is not an expression.
    KilnValueError: func has a parameter that is not plain positional (*args, keywords), or
        its result uses anything but its parameters, integer constants and + - * // %.)doc")
      .def_static(
          "parse",
          [](py::handle text) { return IndexMap::parse(to_str(text, "IndexMap.parse", "text")); },
          py::arg("text"),
          R"doc(Reads the text form, ``"lambda i, j: [i // 16, j, i % 16]"`` (what str() gives).

Raises:
    KilnValueError: the text does not parse; the message gives the position.
    KilnTypeError: text is not a str.)doc")
      .def_property_readonly("initial_indices", &IndexMap::initial_indices,
                             "The variables the map is a function of (list of tir.Var).")
      .def_property_readonly("final_indices", &IndexMap::final_indices,
                             "The new indices, expressions of the initial indices.")
      .def(
          "map_indices",
          [](const IndexMap& map, py::handle indices) {
            return map.map_indices(to_expr_list(indices, "IndexMap.map_indices", "indices"));
          },
          py::arg("indices"),
          R"doc(The new indices at ``indices`` (one per initial index).

Example:
    tir.IndexMap.from_func(lambda i, j: [j, i]).map_indices([3, 5])   # [5, 3]

Raises:
    KilnIndexError: the number of indices differs from the number of initial indices.
    KilnTypeError: indices is not a list of expressions or ints.)doc")
      .def("__str__", &IndexMap::to_text)
      .def("__repr__", [](const IndexMap& map) { return "IndexMap(" + map.to_text() + ")"; });
}

void bind_schedule_buffers(ScheduleClass& cls) {
  cls.def(
         "cache_read",
         [](Schedule& s, py::handle block, py::handle read_buffer_index, py::handle storage_scope,
            py::handle consumer_blocks) {
           const char* api = "Schedule.cache_read";
           return apply(s, api, [&](Handles& h) {
             RV b = h.block(block, "block");
             std::vector<RV> consumers;
             if (!consumer_blocks.is_none())
               consumers = h.blocks(consumer_blocks, "consumer_blocks");
             return to_python(cache_read(s, b, to_int(read_buffer_index, api, "read_buffer_index"),
                                         to_str(storage_scope, api, "storage_scope"), consumers));
           });
         },
         py::arg("block"), py::arg("read_buffer_index"), py::arg("storage_scope"),
         py::arg("consumer_blocks") = py::none(),
         R"doc(Adds a block that copies a buffer the block reads into a new buffer in another
storage scope, and makes the readers read the copy.

The copy block is named "<buffer>_<scope>"; it copies the region the readers read, right before
the first of them. compute_at then moves it under a tile (packing a GEMM's operand).

Args:
    block (BlockRV or str): a block that reads the buffer, or its name.
    read_buffer_index (int): the position of the buffer in the block's reads.
    storage_scope (str): "global", "shared", "shared.dyn" (dynamic shared memory), "local" or
        "warp" (a warp's registers: the fragments of the cuda.mma_* tensor intrinsics).
    consumer_blocks (list of BlockRV or str, optional): only these readers read the copy (and
        decide its region and place); the others keep reading the original. Default: all.

Returns:
    BlockRV: the copy block.

Raises:
    BufferIndexOutOfRangeError: the block reads fewer buffers.
    InvalidStorageScopeError: an unknown scope.
    ReadWriteBufferError: the block also writes the buffer.
    NotSingleWriteBlockError: more than one block writes the buffer.
    CacheLocationError: no place between the buffer's producer and its first reader.
    NotAConsumerError: a block of consumer_blocks does not read the buffer.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    A_local = sch.cache_read("C", 0, "local")
    sch.compute_at(A_local, ko))doc")
      .def(
          "cache_write",
          [](Schedule& s, py::handle block, py::handle write_buffer_index,
             py::handle storage_scope) {
            const char* api = "Schedule.cache_write";
            return apply(s, api, [&](Handles& h) {
              RV b = h.block(block, "block");
              return to_python(cache_write(s, b,
                                           to_int(write_buffer_index, api, "write_buffer_index"),
                                           to_str(storage_scope, api, "storage_scope")));
            });
          },
          py::arg("block"), py::arg("write_buffer_index"), py::arg("storage_scope"),
          R"doc(Makes the block write a new buffer in another storage scope, and adds a block that
copies it into the original buffer.

Every access of the block (its stores, and the loads of a reduction) names the new buffer. The
copy block, "<buffer>_<scope>", goes before the first reader of the buffer (after the block when
nothing reads it); reverse_compute_at then moves it under a tile (a GEMM's register
accumulator).

Args:
    block (BlockRV or str): the writer, or its name.
    write_buffer_index (int): the position of the buffer in the block's writes.
    storage_scope (str): "global", "shared", "shared.dyn" (dynamic shared memory), "local" or
        "warp" (a warp's registers: the fragments of the cuda.mma_* tensor intrinsics).

Returns:
    BlockRV: the copy block.

Raises:
    BufferIndexOutOfRangeError: the block writes fewer buffers.
    InvalidStorageScopeError: an unknown scope.
    NotSingleWriteBlockError: another block also writes the buffer.
    CacheLocationError: no place between the block and the buffer's first reader.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    C_local = sch.cache_write("C", 0, "local")
    sch.reverse_compute_at(C_local, jo))doc")
      .def(
          "set_scope",
          [](Schedule& s, py::handle block, py::handle buffer_index, py::handle storage_scope) {
            const char* api = "Schedule.set_scope";
            apply(s, api, [&](Handles& h) {
              RV b = h.block(block, "block");
              set_scope(s, b, to_int(buffer_index, api, "buffer_index"),
                        to_str(storage_scope, api, "storage_scope"));
            });
          },
          py::arg("block"), py::arg("buffer_index"), py::arg("storage_scope"),
          R"doc(Moves a buffer the block writes to another storage scope (its declaration only).

Args:
    block (BlockRV or str): the writer, or its name.
    buffer_index (int): the position of the buffer in the block's writes.
    storage_scope (str): "global", "shared", "shared.dyn" (dynamic shared memory), "local" or
        "warp" (a warp's registers: the fragments of the cuda.mma_* tensor intrinsics).

Raises:
    BufferIndexOutOfRangeError: the block writes fewer buffers.
    InvalidStorageScopeError: an unknown scope.
    FunctionParamBufferError: the buffer is a parameter of the function.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    sch.set_scope("B", 0, "local"))doc")
      .def(
          "storage_align",
          [](Schedule& s, py::handle block, py::handle buffer_index, py::handle axis,
             py::handle factor, py::handle offset) {
            const char* api = "Schedule.storage_align";
            apply(s, api, [&](Handles& h) {
              RV b = h.block(block, "block");
              storage_align(s, b, to_int(buffer_index, api, "buffer_index"),
                            to_int(axis, api, "axis"), to_int(factor, api, "factor"),
                            to_int(offset, api, "offset"));
            });
          },
          py::arg("block"), py::arg("buffer_index"), py::arg("axis"), py::arg("factor"),
          py::arg("offset"),
          R"doc(Pads the stride of dimension ``axis`` of a buffer the block writes so that
stride % factor == offset (to avoid bank conflicts or cache-set aliasing).

The block records the alignment (its "kiln.storage_align" annotation); lowering applies it to
the buffer's final shape, so a tile compacted out of the buffer is padded by its own row length.
Aligning the same axis again replaces the alignment; several axes combine.

Args:
    block (BlockRV or str): the writer, or its name.
    buffer_index (int): the position of the buffer in the block's writes.
    axis (int): the dimension; negative counts from the last.
    factor (int): the modulus, > 0.
    offset (int): the remainder, 0 <= offset < factor.

Raises:
    BufferIndexOutOfRangeError: the block writes fewer buffers.
    FunctionParamBufferError: the buffer is a parameter of the function.
    InvalidStorageAlignError: axis, factor or offset is out of range.
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    sch.storage_align("B", 0, axis=0, factor=8, offset=1))doc")
      .def(
          "transform_layout",
          [](Schedule& s, py::handle block, py::handle buffer, py::handle index_map) {
            apply(s, "Schedule.transform_layout", [&](Handles& h) {
              RV b = h.block(block, "block");
              transform_layout(s, b, to_buffer_spec(buffer), to_index_map(index_map));
            });
          },
          py::arg("block"), py::arg("buffer"), py::arg("index_map"),
          R"doc(Rewrites a buffer to the layout of ``index_map``: its shape becomes the range of the
map, and every access in the function uses the mapped indices. A parameter changes the
function's signature (callers pass the array in the new layout).

Args:
    block (BlockRV or str): a block that accesses the buffer, or its name.
    buffer (tuple or str): ("read", i) or ("write", i) for the i-th read or write of the block,
        or the buffer's name.
    index_map (IndexMap, callable or str): the map, e.g. ``lambda k, j: [j // 16, k, j % 16]``.

Raises:
    BufferIndexOutOfRangeError, BufferNotFoundError: the block has no such buffer.
    InvalidIndexMapError: the map does not take one index per dimension.
    NonBijectiveIndexMapError: the map is not a bijection onto its range (padding is not
        supported).
    BlockNotFoundError, StaleHandleError, KilnTypeError: as get_loops.

Example:
    sch.transform_layout("C", ("read", 1), lambda k, j: [j // 16, k, j % 16]))doc");
}

}  // namespace kiln::python
