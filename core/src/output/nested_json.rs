//! JSON arrays of nodes nested by `children`, written from a tree met depth first
//! (`visit(depth, node)`): each node is written up to its open `children` array,
//! which is closed when the walk leaves the node. `profile.json`'s tree and
//! `tasktree.json` are both written this way, node by node, never held whole.

use std::io::Write;

/// The writer of one such array (its own brackets are the caller's).
pub struct NestedJson<'a, W: Write> {
    out: &'a mut W,
    /// Nodes whose children are open.
    open: usize,
    /// Whether the next node is the first of its array.
    first: bool,
    buf: Vec<u8>,
    result: std::io::Result<()>,
}

impl<'a, W: Write> NestedJson<'a, W> {
    /// A writer into `out`.
    pub fn new(out: &'a mut W) -> Self {
        NestedJson {
            out,
            open: 0,
            first: true,
            buf: Vec::new(),
            result: Ok(()),
        }
    }

    /// The next node, at `depth`: `open` appends its JSON up to and including
    /// `"children":[` to the buffer it is given.
    pub fn node(&mut self, depth: usize, open: impl FnOnce(&mut Vec<u8>)) {
        if self.result.is_err() {
            return;
        }
        self.buf.clear();
        while self.open > depth {
            self.buf.extend_from_slice(b"]}");
            self.open -= 1;
            self.first = false;
        }
        if !self.first {
            self.buf.push(b',');
        }
        open(&mut self.buf);
        self.open += 1;
        self.first = true;
        self.result = self.out.write_all(&self.buf);
    }

    /// Closes every node still open; the first write error, if any.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.result?;
        for _ in 0..self.open {
            self.out.write_all(b"]}")?;
        }
        self.open = 0;
        Ok(())
    }
}
