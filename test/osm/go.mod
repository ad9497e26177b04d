module skein.dev/osmpeer

go 1.26.0

require github.com/openservicemesh/osm v1.2.4
