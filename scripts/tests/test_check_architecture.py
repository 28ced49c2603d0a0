"""Tests of scripts/check-architecture.py on tiny fake workspaces built in a temp dir.

Run: python3 -m unittest discover -s scripts/tests (part of `make lint`).
"""
import importlib.util
import os
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("check_architecture", os.path.join(HERE, "..", "check-architecture.py"))
ca = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(ca)

LAYERS = [["low"], ["mid"], ["top"]]
FORBIDDEN = {"mid": ["tokio"]}


class Workspace:
    """A workspace of crates `low`, `mid` and `top` in a temp dir; files written on demand."""

    def __init__(self, root, members=("low", "mid", "top")):
        self.root = root
        quoted = ", ".join(f'"{m}"' for m in members)
        self.write("Cargo.toml", f"[workspace]\nmembers = [{quoted}]\n")
        for m in members:
            self.manifest(m)
            self.write(f"{m}/src/lib.rs", "pub fn f() {}\n")

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))

    def manifest(self, crate, deps=""):
        self.write(f"{crate}/Cargo.toml", f'[package]\nname = "{crate}"\n\n[dependencies]\n{textwrap.dedent(deps)}')

    def check(self, module_rules=None):
        return ca.check(self.root, LAYERS, FORBIDDEN, module_rules or {})


class CheckArchitectureTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.ws = Workspace(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def cycles(self):
        problems, _ = self.ws.check()
        return [p for p in problems if "import cycle" in p]

    def test_a_clean_crate_passes(self):
        self.ws.write("top/src/lib.rs", "pub mod a;\npub mod b;\npub use a::A;\n")
        self.ws.write("top/src/a.rs", "use crate::b::B;\npub struct A(pub B);\n")
        self.ws.write("top/src/b.rs", "pub struct B;\npub fn g() -> crate::b::B { B }\n")
        self.ws.manifest("top", 'low = { path = "../low" }\nmid = { path = "../mid" }\n')
        problems, summary = self.ws.check()
        self.assertEqual(problems, [])
        self.assertIn("3 crates, layers hold (low < mid < top)", summary)
        self.assertIn("5 files", summary)

    def test_a_cycle_through_an_inline_crate_path_is_found(self):
        self.ws.write("top/src/lib.rs", "pub mod a;\npub mod b;\n")
        self.ws.write("top/src/a.rs", "use crate::b::B;\npub struct A;\npub fn f(_: B) {}\n")
        # No `use` line: the import back is an inline path in a function body.
        self.ws.write("top/src/b.rs", "pub struct B;\npub fn g() {\n    let _ = crate::a::A;\n}\n")
        cycles = self.cycles()
        self.assertEqual(len(cycles), 1, cycles)
        self.assertIn("a -> b -> a", cycles[0])
        self.assertIn("b.rs:3 crate::a::A", cycles[0])

    def test_a_cycle_through_super_and_a_facade_is_found(self):
        # parent/mod.rs re-exports the child; the child imports through the parent.
        self.ws.write("top/src/lib.rs", "pub mod parent;\n")
        self.ws.write("top/src/parent/mod.rs", "mod child;\npub use child::Child;\npub struct Shared;\n")
        self.ws.write("top/src/parent/child.rs", "pub struct Child(pub super::Shared);\n")
        cycles = self.cycles()
        self.assertEqual(len(cycles), 1, cycles)
        self.assertIn("parent -> parent::child -> parent", cycles[0])

    def test_a_cycle_through_impl_for_and_a_child_call_is_found(self):
        self.ws.write("top/src/lib.rs", "pub mod part;\npub mod job;\n")
        self.ws.write("top/src/part/mod.rs", "mod ha;\npub trait JobPart {}\npub fn start() { ha::go() }\n")
        self.ws.write("top/src/part/ha.rs", "pub struct Ha;\nimpl crate::part::JobPart for Ha {}\npub fn go() {}\n")
        cycles = self.cycles()
        self.assertEqual(len(cycles), 1, cycles)
        self.assertIn("part -> part::ha -> part", cycles[0])

    def test_a_parent_declaring_its_child_is_no_cycle(self):
        self.ws.write("top/src/lib.rs", "pub mod parent;\n")
        self.ws.write("top/src/parent/mod.rs", "mod child;\npub struct Shared;\n")
        self.ws.write("top/src/parent/child.rs", "use super::Shared;\npub struct Child(pub Shared);\n")
        self.assertEqual(self.cycles(), [])

    def test_test_only_imports_are_ignored(self):
        self.ws.write("top/src/lib.rs", "pub mod a;\npub mod b;\n")
        self.ws.write("top/src/a.rs", "use crate::b::B;\npub struct A;\npub fn f(_: B) {}\n")
        self.ws.write(
            "top/src/b.rs",
            """\
            pub struct B;
            #[cfg(test)]
            use crate::a::A;
            pub fn g() -> B { B } // crate::a::A in a comment
            pub const S: &str = "crate::a::A in a string";
            #[cfg(test)]
            mod tests {
                #[test]
                fn t() { let _ = crate::a::A; }
            }
            """,
        )
        # A `#[cfg(test)] mod tests;` file is test code as a whole.
        self.ws.write("top/src/lib.rs", "pub mod a;\npub mod b;\n#[cfg(test)]\nmod tests;\n")
        self.ws.write("top/src/tests.rs", "use crate::a::A;\nuse crate::b::B;\n")
        self.assertEqual(self.cycles(), [])
        # Code after a test item still counts.
        self.ws.write("top/src/b.rs", "pub struct B;\n#[cfg(test)]\nmod tests {}\npub fn g() { let _ = crate::a::A; }\n")
        self.assertEqual(len(self.cycles()), 1)

    def test_a_module_importing_what_its_rule_forbids_fails(self):
        self.ws.write("top/src/lib.rs", "pub mod model;\npub mod part;\npub mod shared;\n")
        self.ws.write("top/src/model/mod.rs", "pub mod pull;\n")
        self.ws.write("top/src/model/pull.rs", "pub fn f() { crate::part::ledger::g(); crate::shared::h(); }\n")
        self.ws.write("top/src/part/mod.rs", "pub mod ledger;\n")
        self.ws.write("top/src/part/ledger.rs", "pub fn g() { crate::shared::h(); }\n")
        self.ws.write("top/src/shared.rs", "pub fn h() {}\n")
        rules = {"top": {"model": ["part"]}}
        problems, _ = self.ws.check(rules)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("top/src/model/pull.rs:1", problems[0])
        self.assertIn("model must never import part", problems[0])
        # Moved below both, the shared piece breaks no rule.
        self.ws.write("top/src/model/pull.rs", "pub fn f() { crate::shared::h(); }\n")
        self.assertEqual(self.ws.check(rules)[0], [])

    def test_a_dependency_that_does_not_point_down_fails(self):
        self.ws.manifest("mid", 'top = { path = "../top" }\n')
        problems, _ = self.ws.check()
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("mid: depends on top, which is not below it", problems[0])

    def test_a_dependency_within_a_layer_fails(self):
        self.tmp.cleanup()
        self.tmp = tempfile.TemporaryDirectory()
        self.ws = Workspace(self.tmp.name, ("low", "mid", "top", "side"))
        self.ws.manifest("side", "mid.workspace = true\n")
        problems, _ = ca.check(self.tmp.name, [["low"], ["mid", "side"], ["top"]], {})
        self.assertEqual(problems, ["side: depends on mid, which is not below it (layer 1 >= 1): move the shared piece down"])

    def test_a_forbidden_dependency_fails(self):
        self.ws.manifest("mid", 'tokio = "1"\nlow = { path = "../low" }\n')
        problems, _ = self.ws.check()
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("mid: depends on tokio", problems[0])

    def test_a_member_missing_from_the_layers_fails(self):
        self.ws.write("Cargo.toml", '[workspace]\nmembers = ["low", "mid", "top", "new"]\n')
        self.ws.manifest("new")
        self.ws.write("new/src/lib.rs", "")
        problems, _ = self.ws.check()
        self.assertEqual(problems, ["new: not in LAYERS (scripts/check-architecture.py): give it a layer"])

    def test_a_long_file_fails(self):
        self.ws.write("low/src/lib.rs", "pub fn f() {}\n" * (ca.MAX_LINES + 1))
        problems, _ = self.ws.check()
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("601 lines", problems[0])


class LexTest(unittest.TestCase):
    def test_comments_strings_and_chars_are_blanked(self):
        src = "let a = b'\\\\'; let s = r#\"crate::x\"#; /* crate::y */ let c = '\"'; crate::z::f();"
        out = ca.blank_comments_and_strings(src)
        self.assertEqual(len(out), len(src))
        self.assertNotIn("crate::x", out)
        self.assertNotIn("crate::y", out)
        self.assertIn("crate::z::f", out)

    def test_a_serde_path_string_is_kept(self):
        src = '#[serde(deserialize_with = "lenient::int")]'
        self.assertIn("lenient::int", ca.blank_comments_and_strings(src))


if __name__ == "__main__":
    unittest.main()
