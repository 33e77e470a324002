//! Discovery: finding the subresources of HTML while it streams in, and of CSS once it
//! has arrived. See [`html`] and [`css`].

pub mod css;
pub mod html;

pub use css::{scan_css, CssRef};
pub use html::{Blocking, HtmlRef, HtmlScanner};
