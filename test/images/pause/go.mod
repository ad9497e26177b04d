module skein.test/pause

go 1.21
