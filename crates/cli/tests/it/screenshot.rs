//! take_screenshot tests (being written).
