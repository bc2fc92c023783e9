// Package origin keeps a mirror's downloads on the Source's authority.
//
// A redirect (301, 302, 303, 307, 308) or a rel="duplicate" location can
// lead anywhere: followed blindly, it installs in DEST the content of an
// unrelated host and port. A Policy allows the Source's authority
// (scheme, host and port, with the scheme's default port made explicit)
// and the hosts the user allows in addition; everything else is refused
// with an *Error matching ErrOffOrigin, which is permanent: no retry can
// change where a URL points.
package origin
