"""npumem.onnx_lifetimes and `npumem plan memory --onnx`: the lifetimes of small ONNX
models built here (expectations worked out by hand), the command's report and exit
codes, bad input, and a model exported by torch.onnx."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

import npumem.plan

try:
    import numpy
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    onnx = None

from npumem.onnx_lifetimes import OnnxModelError, Tensor, read

FLOAT_BYTES = 4


def weight(name: str, *shape: int):
    return numpy_helper.from_array(numpy.full(shape, 0.5, dtype=numpy.float32), name)


def chain_model(batch=2):
    """x -> MatMul -> Relu -> MatMul -> MatMul -> Add(residual a) -> Add(Constant k) -> Relu.

    ops: 0 a=x@W1 [b,32]   1 b=Relu(a)   2 c=b@W2 [b,64]   3 d=c@W3 [b,32]   4 e=d+a
         5 f=e+k   6 y=Relu(f) (graph output)
    W2 = Transpose(W2raw) and W3 = Identity(W3raw) only read weights: folded into weights.
    """
    nodes = [
        helper.make_node("Transpose", ["W2raw"], ["W2"], name="fold_w2"),
        helper.make_node("Identity", ["W3raw"], ["W3"], name="alias_w3"),
        helper.make_node("Constant", [], ["k"], name="k",
                         value=weight("k_value", 32)),
        helper.make_node("MatMul", ["x", "W1"], ["a"], name="mm1"),
        helper.make_node("Relu", ["a"], ["b"], name="relu1"),
        helper.make_node("MatMul", ["b", "W2"], ["c"], name="mm2"),
        helper.make_node("MatMul", ["c", "W3"], ["d"], name="mm3"),
        helper.make_node("Add", ["d", "a"], ["e"], name="residual"),
        helper.make_node("Add", ["e", "k"], ["f"], name="bias"),
        helper.make_node("Relu", ["f"], ["y"], name="relu2"),
    ]
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 32])],
        [weight("W1", 32, 32), weight("W2raw", 64, 32), weight("W3raw", 64, 32)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def chain_tensors(batch: int) -> list[Tensor]:
    row = 32 * FLOAT_BYTES * batch
    return [Tensor("a", row, 0, 4), Tensor("b", row, 1, 2), Tensor("c", 2 * row, 2, 3),
            Tensor("d", row, 3, 4), Tensor("e", row, 4, 5), Tensor("f", row, 5, 6),
            Tensor("y", row, 6, 6)]


# W1 32x32, W2raw 64x32, W3raw 64x32, k 32, and W2 (a folded Transpose) 32x64; the
# Identity W3 only renames W3raw.
CHAIN_WEIGHT_BYTES = (32 * 32 + 64 * 32 + 64 * 32 + 32 + 32 * 64) * FLOAT_BYTES


@unittest.skipIf(onnx is None, "needs python3-onnx")
class OnnxLifetimesTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.directory.cleanup()

    def save(self, model, name="model.onnx") -> str:
        path = os.path.join(self.directory.name, name)
        onnx.save(model, path)
        return path

    def write(self, data: bytes, name: str) -> str:
        path = os.path.join(self.directory.name, name)
        with open(path, "wb") as file:
            file.write(data)
        return path

    def test_the_module_is_there_after_import_npumem(self):
        # PYTHON.md's npumem.onnx_lifetimes.read(...) after `import npumem` raised
        # AttributeError: the submodule needed an import of its own.
        done = subprocess.run(
            [sys.executable, "-c", "import npumem; print(npumem.onnx_lifetimes.read.__name__)"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "read")

    def test_chain_lifetimes_weights_and_inputs(self):
        lifetimes = read(self.save(chain_model()))
        self.assertEqual(lifetimes.ops, 7)
        self.assertEqual(lifetimes.tensors, chain_tensors(batch=2))
        self.assertEqual(lifetimes.weight_tensors, 5)
        self.assertEqual(lifetimes.weight_bytes, CHAIN_WEIGHT_BYTES)
        self.assertEqual((lifetimes.input_tensors, lifetimes.input_bytes), (1, 2 * 32 * 4))

    def test_records_plan_to_the_residual_peak(self):
        lifetimes = read(self.save(chain_model()))
        plan = npumem.plan.memory(lifetimes.records())
        # Ops 2 and 3 hold a, c (twice a row) and b or d: four rows of 256 B.
        self.assertEqual(plan.lower_bound_bytes, 4 * 256)
        self.assertEqual(plan.naive_bytes, 8 * 256)
        self.assertEqual(plan.arena_bytes, 4 * 256)

    def test_views_share_their_inputs_buffer(self):
        # relu0 -> Reshape (a view of a) -> relu2 -> Flatten (a view of c, the output).
        shape = numpy_helper.from_array(numpy.array([4, 8], dtype=numpy.int64), "shape")
        graph = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("Reshape", ["a", "shape"], ["b"]),
             helper.make_node("Relu", ["b"], ["c"]),
             helper.make_node("Flatten", ["c"], ["y"])],
            "views", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], [shape])
        lifetimes = read(self.save(helper.make_model(graph)))
        self.assertEqual(lifetimes.ops, 4)
        # a stays alive while its view b is read (op 2); c lives to the end as y.
        self.assertEqual(lifetimes.tensors, [Tensor("a", 128, 0, 2), Tensor("c", 128, 2, 3)])
        self.assertEqual(lifetimes.view_tensors, 2)
        self.assertIn("2 views", lifetimes.records().splitlines()[0])

    def test_weights_in_external_data_are_counted_not_loaded(self):
        path = os.path.join(self.directory.name, "external.onnx")
        onnx.save(chain_model(), path, save_as_external_data=True, location="external.data",
                  size_threshold=0)
        lifetimes = read(path)
        self.assertEqual(lifetimes.tensors, chain_tensors(batch=2))
        self.assertEqual(lifetimes.weight_bytes, CHAIN_WEIGHT_BYTES)
        os.remove(os.path.join(self.directory.name, "external.data"))
        with self.assertRaisesRegex(OnnxModelError, "not a valid ONNX model: .*external.data"):
            read(path)

    def test_symbolic_dimension_needs_a_size(self):
        model = chain_model(batch="batch")
        path = self.save(model)
        with self.assertRaisesRegex(OnnxModelError, r"input 'x' dim 0 \('batch'\): "
                                    r"dims\['batch'\]=N"):
            read(path)
        self.assertEqual(read(path, {"batch": 3}).tensors, chain_tensors(batch=3))
        self.assertEqual(read(path, {"x:0": 5}).tensors, chain_tensors(batch=5))
        with self.assertRaisesRegex(OnnxModelError, r"dims\['batchsize'\]: no graph input"):
            read(path, {"batch": 3, "batchsize": 3})
        # An axis the input lacks, or one of fixed size: named before the dimension left
        # unsized, which it was meant for (it was ignored, and the size asked for).
        x_axes = len(model.graph.input[0].type.tensor_type.shape.dim)
        with self.assertRaisesRegex(
            OnnxModelError, rf"dims\['x:5'\]: input 'x' has {x_axes} axes \(0 to {x_axes - 1}\)"
        ):
            read(path, {"x:5": 4})
        fixed = model.graph.input[0].type.tensor_type.shape.dim[1].dim_value
        with self.assertRaisesRegex(
            OnnxModelError, rf"dims\['x:1'\]: input 'x' dim 1 is fixed at {fixed}"
        ):
            read(path, {"batch": 3, "x:1": 4})
        # By name and by input and axis at once: "no graph input has ... 'batch'" before.
        with self.assertRaisesRegex(OnnxModelError, r"input 'x' dim 0 is given twice: "
                                    r"dims\['x:0'\]=3 and dims\['batch'\]=2"):
            read(path, {"x:0": 3, "batch": 2})
        self.assertEqual(read(path, {"x:0": 3, "batch": 3}).tensors, chain_tensors(batch=3))
        square = chain_model(batch="n")
        square.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "n"
        square_path = self.save(square)
        with self.assertRaisesRegex(OnnxModelError, r"dimension 'n' is given two sizes: "
                                    r"dims\['x:0'\]=2 and dims\['x:1'\]=3"):
            read(square_path, {"x:0": 2, "x:1": 3})

    def test_tensors_of_2_to_the_64_bytes_or_more_are_refused_by_name(self):
        # Their sizes reached `npumem plan memory` wrapped: an arena of 0 B that "fits".
        path = self.save(chain_model(batch="batch"))
        with self.assertRaisesRegex(OnnxModelError, r"tensor 'x' \(a graph input\) holds "
                                    r"590295810358705651712 bytes, more than 2\^64-1"):
            read(path, {"batch": 2**62})
        with self.assertRaisesRegex(OnnxModelError, r"dims\['batch'\]=18446744073709551615: "
                                    r"more than 2\^63-1"):
            read(path, {"batch": 2**64 - 1})

    def test_a_dimension_given_twice_is_refused(self):
        from npumem.onnx_lifetimes import main
        path = self.save(chain_model(batch="batch"))
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = main([path, "--json", "--dim", "batch=8", "--dim", "batch=9"])
        self.assertEqual(code, 2)
        self.assertIn("--dim batch is given twice (8 and 9)", json.loads(out.getvalue())["error"])

    def test_unnamed_free_dimension_is_named_by_input_and_axis(self):
        model = chain_model()
        model.graph.input[0].type.tensor_type.shape.dim[0].Clear()
        path = self.save(model)
        with self.assertRaisesRegex(OnnxModelError,
                                    r"input 'x' dim 0 \(unnamed\): dims\['x:0'\]=N"):
            read(path)
        self.assertEqual(read(path, {"x:0": 2}).tensors, chain_tensors(batch=2))

    def test_data_dependent_shape_names_the_tensor_and_dim(self):
        graph = helper.make_graph(
            [helper.make_node("NonZero", ["x"], ["where"], name="nz"),
             helper.make_node("Identity", ["where"], ["y"])],
            "nonzero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
            [helper.make_tensor_value_info("y", TensorProto.INT64, [2, None])])
        path = self.save(helper.make_model(graph))
        with self.assertRaisesRegex(
                OnnxModelError, r"tensor 'where' \(output of node 0 'nz' \(NonZero\)\) dim 1 "
                r".*unknown after shape inference"):
            read(path)

    def test_shape_inference_names_the_first_node_that_failed(self):
        # Every node after it failed for want of its input's type: the message listed
        # them all, one line of kilobytes.
        nodes = [helper.make_node("Add", ["x", "w"], ["a"], name="add")]
        nodes += [helper.make_node("Relu", ["a" if i == 0 else f"r{i - 1}"],
                                   [f"r{i}" if i < 19 else "y"], name=f"relu{i}")
                  for i in range(20)]
        graph = helper.make_graph(
            nodes, "cascade",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 32])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])],
            [weight("w", 3, 32)])
        path = self.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
        with self.assertRaises(OnnxModelError) as raised:
            read(path, {"batch": 2})
        message = str(raised.exception)
        self.assertRegex(message, r"shape inference failed at node 'add' \(Add\): "
                                  r".*Incompatible dimensions; 20 nodes after it failed too$")
        self.assertNotIn("relu", message)
        with self.assertRaisesRegex(OnnxModelError, r"dims\['batch'\]=0: an input dimension of 0 "
                                                    r"leaves nothing to plan"):
            read(path, {"batch": 0})

    def test_shapes_computed_in_the_graph_are_folded(self):
        # y = Relu(x[:, :x.shape[1] // 2]) the way torch.onnx writes it: Shape, Gather and
        # Div compute the Slice's end, which shape inference alone leaves unknown.
        def int64(name, *values):
            return helper.make_node("Constant", [], [name], value=helper.make_tensor(
                name + "_value", TensorProto.INT64, [len(values)], list(values)))
        nodes = [
            int64("index", 1), int64("two", 2), int64("start", 0), int64("axis", 1),
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Gather", ["shape", "index"], ["width"], axis=0),
            helper.make_node("Div", ["width", "two"], ["half"]),
            helper.make_node("Slice", ["x", "start", "half", "axis"], ["left"]),
            helper.make_node("Relu", ["left"], ["y"]),
        ]
        graph = helper.make_graph(
            nodes, "half", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, None])])
        lifetimes = read(self.save(helper.make_model(graph)))
        self.assertEqual(lifetimes.tensors, [Tensor("left", 2 * 3 * 4, 0, 1),
                                             Tensor("y", 2 * 3 * 4, 1, 1)])
        # What the Slice still reads: start, half and axis, one int64 each.
        self.assertEqual((lifetimes.weight_tensors, lifetimes.weight_bytes), (3, 3 * 8))

    def test_large_constant_of_shape_stays_a_tensor(self):
        # torch.onnx writes an RNN's zero initial state as ConstantOfShape of the state's
        # shape: too large to fold here, it is computed from constants only, so it is
        # counted with the weights, as a folded transpose of a weight is.
        shape = numpy_helper.from_array(numpy.array([1, 8, 1024], dtype=numpy.int64), "shape")
        graph = helper.make_graph(
            [helper.make_node("ConstantOfShape", ["shape"], ["h0"]),
             helper.make_node("Add", ["x", "h0"], ["y"])],
            "state", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 1024])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1024])], [shape])
        lifetimes = read(self.save(helper.make_model(graph)))
        self.assertEqual(lifetimes.tensors, [Tensor("y", 8 * 1024 * 4, 0, 0)])
        self.assertEqual((lifetimes.weight_tensors, lifetimes.weight_bytes),
                         (2, 8 * 1024 * 4 + 3 * 8))

    def test_subgraph_is_refused_by_name(self):
        branch = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["out"])], "branch", [],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])])
        graph = helper.make_graph(
            [helper.make_node("If", ["cond"], ["y"], name="choose", then_branch=branch,
                              else_branch=branch)],
            "with_if",
            [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
             helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        path = self.save(helper.make_model(graph))
        with self.assertRaisesRegex(OnnxModelError,
                                    r"node 0 'choose' \(If\) has a subgraph .*not supported"):
            read(path)

    def test_files_that_are_not_models(self):
        serialized = chain_model().SerializeToString()
        cases = {
            "text.onnx": b"this is not a model\n",
            "empty.onnx": b"",
            "truncated.onnx": serialized[: len(serialized) // 2],
        }
        for name, data in cases.items():
            with self.subTest(name):
                with self.assertRaisesRegex(OnnxModelError, f"{name}: not an? .*ONNX model"):
                    read(self.write(data, name))
        with self.assertRaisesRegex(OnnxModelError, "missing.onnx: no such file"):
            read(os.path.join(self.directory.name, "missing.onnx"))
        with self.assertRaisesRegex(OnnxModelError, "is a directory, not an ONNX model"):
            read(self.directory.name)
        # It exists: "no such file" sent the user looking for a typo.
        with self.assertRaisesRegex(OnnxModelError,
                                    "/dev/null: not a regular file, so not an ONNX model"):
            read("/dev/null")

    def test_reads_a_missing_producer_as_invalid(self):
        model = chain_model()
        model.graph.node[4].input[0] = "nowhere"
        with self.assertRaisesRegex(OnnxModelError, "not a valid ONNX model: .*nowhere.* is not "
                                    "output of any previous nodes"):
            read(self.save(model))


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([os.environ["NPUMEM_CLI"], "plan", "memory", *args],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})})


@unittest.skipIf(onnx is None, "needs python3-onnx")
@unittest.skipUnless(os.environ.get("NPUMEM_CLI"), "needs the npumem command (NPUMEM_CLI)")
class PlanMemoryOnnxCommandTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.model = os.path.join(self.directory.name, "chain.onnx")
        onnx.save(chain_model(), self.model)

    def tearDown(self):
        self.directory.cleanup()

    def test_json_report(self):
        done = run_cli("--onnx", self.model, "--json", "--offsets")
        self.assertEqual(done.returncode, 0, done.stderr)
        report = json.loads(done.stdout)
        self.assertEqual(report["tensors"], 7)
        self.assertEqual(report["lower_bound_bytes"], 1024)
        self.assertEqual(report["arena_bytes"], 1024)
        self.assertEqual(report["naive_bytes"], 2048)
        self.assertEqual(report["outside_arena"],
                         {"weights": {"tensors": 5, "bytes": CHAIN_WEIGHT_BYTES},
                          "inputs": {"tensors": 1, "bytes": 256}})
        self.assertEqual(len(report["offsets"]), 7)

    def test_text_report_says_what_is_outside_the_arena(self):
        done = run_cli("--onnx", self.model, "--budget", "1KiB")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(f"weights      5 tensors, {CHAIN_WEIGHT_BYTES / 1024:.1f} KiB", done.stdout)
        self.assertIn("lasting, outside the arena", done.stdout)
        self.assertIn("inputs       1 tensor, 256 B (256 B): the caller's buffers", done.stdout)
        self.assertIn("fits, 0 B to spare", done.stdout)

    def test_over_budget_exits_two_saying_by_how_much(self):
        done = run_cli("--onnx", self.model, "--budget", "1000B")
        self.assertEqual(done.returncode, 2)
        self.assertIn("does not fit, 24 B short", done.stdout)
        self.assertIn("over the budget of 1000 B (1000 B) by 24 B", done.stderr)

    def test_dims_reach_the_model(self):
        model = os.path.join(self.directory.name, "batch.onnx")
        onnx.save(chain_model(batch="batch"), model)
        missing = run_cli("--onnx", model)
        self.assertEqual(missing.returncode, 2)
        self.assertIn("--dim batch=N", missing.stderr)
        done = run_cli("--onnx", model, "--dim", "batch=4", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout)["lower_bound_bytes"], 2 * 1024)

    def test_a_malformed_dim_is_bad_input_named_as_such(self):
        # argparse refused it without JSON, and the command blamed a missing Python package.
        model = os.path.join(self.directory.name, "batch.onnx")
        onnx.save(chain_model(batch="batch"), model)
        for dim in ("batch=-1", "batch"):
            with self.subTest(dim):
                done = run_cli("--onnx", model, "--dim", dim)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn(f"npumem: --dim '{dim}': expected NAME=SIZE", done.stderr)
                self.assertNotIn("Python package", done.stderr)
        # Past ONNX's int64 dimensions: a traceback, exit 1, blaming the install.
        done = run_cli("--onnx", model, "--dim", f"batch={2**64 - 1}")
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("more than 2^63-1", done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        # A product past 2^64 bytes: an arena of 0 B that fit any budget, exit 0.
        done = run_cli("--onnx", model, "--dim", f"batch={2**62}", "--budget", "1KiB")
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("more than 2^64-1", done.stderr)

    def test_bad_input_exits_two_naming_the_problem(self):
        text = os.path.join(self.directory.name, "notes.onnx")
        with open(text, "w", encoding="utf-8") as file:
            file.write("not a model\n")
        done = run_cli("--onnx", text)
        self.assertEqual(done.returncode, 2)
        self.assertIn(f"npumem: {text}: not an ONNX model", done.stderr)
        self.assertEqual(done.stdout, "")
        for args in (["--dim", "batch=1", self.model], ["--onnx", self.model, self.model]):
            with self.subTest(args):
                self.assertEqual(run_cli(*args).returncode, 2)

    def test_the_callers_package_comes_before_the_build_trees(self):
        # An installed npumem ran the build tree's package before the one on PYTHONPATH,
        # and failed while that tree was being rebuilt.
        package = os.path.join(self.directory.name, "site", "npumem")
        os.makedirs(package)
        with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8"):
            pass
        with open(os.path.join(package, "onnx_lifetimes.py"), "w", encoding="utf-8") as file:
            file.write("import json\n"
                       "print(json.dumps({'tensors': [{'bytes': 4096, 'first_op': 0, "
                       "'last_op': 0}], 'weight_tensors': 0, 'weight_bytes': 0, "
                       "'input_tensors': 0, 'input_bytes': 0}))\n")
        done = run_cli("--onnx", self.model, "--json",
                       env={"PYTHONPATH": os.path.dirname(package)})
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout)["lower_bound_bytes"], 4096)

    def test_no_python_exits_one_saying_so(self):
        done = run_cli("--onnx", self.model, env={"NPUMEM_PYTHON": "/nonexistent/python3"})
        self.assertEqual(done.returncode, 1)
        self.assertIn("cannot run /nonexistent/python3", done.stderr)


def export_resnet18(path: str) -> str | None:
    """Exports torchvision's resnet18 (random weights) to `path`; the reason when not."""
    try:
        import torch
        import torchvision
    except ImportError as error:
        return f"needs torch and torchvision: {error}"
    model = torchvision.models.resnet18().eval()
    try:
        torch.onnx.export(model, torch.randn(1, 3, 224, 224), path, opset_version=13,
                          input_names=["image"], dynamic_axes={"image": {0: "batch"}})
    except Exception as error:  # torch.onnx needs pieces some builds leave out
        return f"torch.onnx.export failed: {error}"
    return None


@unittest.skipIf(onnx is None, "needs python3-onnx")
@unittest.skipUnless(os.environ.get("NPUMEM_CLI"), "needs the npumem command (NPUMEM_CLI)")
class ExportedModelTest(unittest.TestCase):
    def test_resnet18_plans_to_its_activation_peak(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "resnet18.onnx")
            reason = export_resnet18(path)
            if reason:
                self.skipTest(reason)
            done = run_cli("--onnx", path, "--dim", "batch=1", "--json")
            self.assertEqual(done.returncode, 0, done.stderr)
            report = json.loads(done.stdout)
        # The stem's two 64x112x112 float tensors (conv, then relu), as in
        # ../shared/records/SUMMARY.md for the resnet18 that extract_model.py traces.
        self.assertEqual(report["lower_bound_bytes"], 2 * 64 * 112 * 112 * 4)
        self.assertEqual(report["arena_bytes"], report["lower_bound_bytes"])
        self.assertEqual(report["outside_arena"]["inputs"],
                         {"tensors": 1, "bytes": 3 * 224 * 224 * 4})
        # resnet18's 11,689,512 parameters, less a little: the export folds BatchNorm's
        # scale and shift into the convolutions' weights and biases.
        parameter_bytes = 11_689_512 * 4
        self.assertLessEqual(report["outside_arena"]["weights"]["bytes"], parameter_bytes)
        self.assertGreater(report["outside_arena"]["weights"]["bytes"], 0.99 * parameter_bytes)

if __name__ == "__main__":
    sys.exit(unittest.main())
