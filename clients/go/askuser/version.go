package askuser

// Version is the version of this module, sent in the user agent of every call ("askuser-go/1.0.0").
// Its release tags are named clients/go/v<Version>.
const Version = "1.0.0"
