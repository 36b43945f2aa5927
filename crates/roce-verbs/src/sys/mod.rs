//! What the safe layers build on that needs `unsafe` outside the C ABI: application memory
//! reached through a raw pointer ([`memory::AppMemory`]) and the eventfd of completion channels
//! ([`eventfd::EventFd`]). Depends on nothing else of the crate; each `unsafe` block has its
//! `// SAFETY:` line.

pub mod eventfd;
pub mod memory;
