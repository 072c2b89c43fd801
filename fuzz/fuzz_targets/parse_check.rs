//! Fuzz target: arbitrary UTF-8 through the parser and the checker.
//! "Parsing never fails" and "any panic is a bug": every input must come back as a tree
//! plus diagnostics, without a panic, a stack overflow or a hang.
#![no_main]

use lang::host::{AnchorId, CommitSet, Host, HostError, StoredAnchor};
use libfuzzer_sys::fuzz_target;

/// A host with an empty graph and no modules: imports resolve to "not found", nothing
/// touches the disk.
struct NoWorld;

impl Host for NoWorld {
    fn load(&mut self, _id: AnchorId) -> Result<Option<StoredAnchor>, HostError> {
        Ok(None)
    }

    fn commit(&mut self, _changes: CommitSet) -> Result<(), HostError> {
        Ok(())
    }

    fn user_root(&self) -> AnchorId {
        1
    }

    fn write_stdout(&mut self, _text: &str) {}
}

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = lang::parser::parse(source);
    // Diagnostics must point inside the source.
    for d in &parsed.diagnostics {
        assert!(
            d.span.start <= d.span.end && d.span.end as usize <= source.len(),
            "{d:?}"
        );
    }
    // The checker must accept any tree the parser produces, broken ones included.
    let path = std::path::Path::new("fuzz.svc");
    let _ = lang::checker::check_module(&parsed.module, path, &mut NoWorld);
});
