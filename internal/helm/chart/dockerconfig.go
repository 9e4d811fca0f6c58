package chart

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// DockerConfigKey is the key of a kubernetes.io/dockerconfigjson Secret.
const DockerConfigKey = ".dockerconfigjson"

// dockerConfig is the part of a Docker config.json that holds logins.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

// dockerAuth is one registry's login: auth is base64("user:password"),
// or username and password are given apart. Tokens are not supported.
type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// CredentialsFromDockerConfig reads the login for an OCI repository's
// registry host from the .dockerconfigjson of a kubernetes.io/dockerconfigjson
// Secret, as Flux does for a HelmRepository of type oci: the entry of "auths"
// whose key is the host (with or without a scheme or path, as `docker login`
// writes them). Errors never quote the Secret's content.
func CredentialsFromDockerConfig(data []byte, repositoryURL string) (*Credentials, error) {
	u, err := url.Parse(repositoryURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("repository URL %q has no registry host", repositoryURL)
	}
	var cfg dockerConfig
	if len(data) == 0 {
		return nil, fmt.Errorf("secret has no %q key", DockerConfigKey)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("secret key %q is not a Docker config JSON document", DockerConfigKey)
	}
	for server, entry := range cfg.Auths {
		if registryHost(server) == strings.ToLower(u.Host) {
			c, err := entry.credentials()
			if err != nil {
				return nil, fmt.Errorf("secret key %q, auths entry %q: %w", DockerConfigKey, server, err)
			}
			return c, nil
		}
	}
	return nil, fmt.Errorf("secret key %q has no auths entry for registry %s", DockerConfigKey, u.Host)
}

// registryHost turns an auths key ("host:port", "https://host/v1/") into the
// host:port it is for, as Docker's ConvertToHostname does.
func registryHost(server string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	host, _, _ := strings.Cut(s, "/")
	return strings.ToLower(host)
}

func (a dockerAuth) credentials() (*Credentials, error) {
	user, password := a.Username, a.Password
	if a.Auth != "" {
		decoded, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return nil, errors.New(`"auth" is not base64`)
		}
		var ok bool
		user, password, ok = strings.Cut(string(decoded), ":")
		if !ok {
			return nil, errors.New(`"auth" is not base64 of "username:password"`)
		}
	}
	if user == "" || password == "" {
		if a.IdentityToken != "" || a.RegistryToken != "" {
			return nil, errors.New(`identity and registry tokens are not supported: give "auth" or "username" and "password"`)
		}
		return nil, errors.New(`want "auth", or "username" and "password"`)
	}
	return &Credentials{Username: user, Password: password}, nil
}
