// Package pages helps with the first touch of freshly allocated memory.
//
// A large slice from make comes from pages the kernel has not mapped yet.
// When the first access to such a page is a read (a hash table probing
// its slots, a counter incremented in place), Linux maps the shared zero
// page, and the write that follows faults a second time to copy it, which
// also flushes the page from the TLB of every core the process runs on:
// on a virtual machine that costs tens of microseconds a page. A page
// whose first access is a write faults once. Prefault makes that write.
package pages
