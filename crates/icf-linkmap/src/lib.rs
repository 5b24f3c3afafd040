//! What a link map and the input objects it names say about a linked
//! image that the image itself no longer says.
//!
//! A linker keeping relocations (`-q`) writes a reference to a local
//! symbol as one to the output section plus an offset, so where one input
//! section ends and another starts, the image cannot tell which of the two
//! a field meant. [`InputSections`] reads the link's map (lld, mold, GNU
//! ld, gold): every input section's place, alignment, file and name.
//! [`InputObjects`] opens the objects and archive members the map names,
//! on demand, and reads the relocation at a field: the section its symbol
//! lies in settles the side.
//!
//! Two tools read them: `icf verify` (which input section a field of
//! PLAIN names, where both readings do not hold in FOLDED) and `icf
//! shrink --map` (which constants a field names, before folding them).
//! Neither decides anything here: this crate only reports what the files
//! say, and answers nothing where they are unclear.

mod input_objects;
mod link_map;

pub use input_objects::{InputObjects, Named, SectionFacts};
pub use link_map::{InputSections, Span};
