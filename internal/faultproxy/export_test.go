package faultproxy

// Discarded returns how many bytes faults have swallowed so far, so that
// tests can wait until the proxy has read what they sent.
func (p *Proxy) Discarded() int64 { return p.discarded.Load() }
