#!/usr/bin/perl -w

# oai_static_gateway.pl from HTTP::OAI 4.12 (Debian libhttp-oai-perl 4.12-1,
# /usr/share/doc/libhttp-oai-perl/examples/oai_static_gateway.pl;
# upstream https://metacpan.org/release/HTTP-OAI), an OAI-PMH static
# repository gateway run as CGI.
#
# Copyright 2004-2010, Timothy Brody <tdb01r@ecs.soton.ac.uk>, University of
# Southampton. All rights reserved.
#
# Redistribution and use in source and binary forms, with or without
# modification, are permitted provided that the following conditions are met:
#
# * Redistributions of source code must retain the above copyright notice,
#   this list of conditions and the following disclaimer.
# * Redistributions in binary form must reproduce the above copyright
#   notice, this list of conditions and the following disclaimer in the
#   documentation and/or other materials provided with the distribution.
# * Neither the name of University of Southampton nor the names of its
#   contributors may be used to endorse or promote products derived from
#   this software without specific prior written permission.
#
# THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
# AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
# IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
# ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER OR CONTRIBUTORS BE
# LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
# CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
# SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
# INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
# CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE)
# ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
# POSSIBILITY OF SUCH DAMAGE.
#
# Changed here (marked "oaireal:"), nothing else:
# 1. the static repository comes from $ENV{OAI_STATIC_REPO} (a file: URL)
#    when set, so that one copy serves every test's repository;
# 2. the last two lines: HTTP::OAI 4 needs an HTTP::OAI::SAX::Driver around
#    the XML::SAX::Writer, with start_oai_pmh/end_oai_pmh around generate,
#    and the response's version set to "2.0" (the static file set "2.0s",
#    which would write the static format instead of an OAI-PMH response).

# Change this to the location of your static repository
# XML file
# oaireal: the repository from the environment when set.
my $STATIC_REPO = $ENV{OAI_STATIC_REPO} || 'file:../examples/repository.xml';

use strict;
use HTTP::OAI;
use HTTP::OAI::Repository qw/:validate/;
use XML::SAX::Writer;
use CGI qw/:standard -oldstyle_urls/;

use vars qw( $GZIP );

BEGIN {
	eval { require PerlIO::gzip };
	$GZIP = $@ ? 0 : 1;
}

# Create a new harvester object to read the xml file
my $h = HTTP::OAI::Harvester->new(baseURL=>$STATIC_REPO);

binmode(STDOUT,':utf8');

my @encodings = http('HTTP_ACCEPT_ENCODING');
if( $GZIP && grep { defined($_) && $_ eq 'gzip' } @encodings ) {
	print header(
		-type=>'text/xml; charset=utf-8',
		-charset=>'utf-8',
		'-Content-Encoding'=>'gzip',
	);
	binmode(STDOUT, ":gzip");
} else {
	print header(
		-type=>'text/xml; charset=utf-8',
		-charset=>'utf-8',
	);
}

# Check for grammatical errors in the request
my @errs = validate_request(CGI::Vars());

my $mdp = param('metadataPrefix') || '';
my @mdfs = $h->ListMetadataFormats()->metadataFormat;
if( $mdp && !grep { $_->metadataPrefix } @mdfs ) {
	push @errs, new HTTP::OAI::Error(code=>'cannotDisseminateFormat',message=>"Dissemination as '$mdp' is not supported");
}
if( param('resumptionToken') ) {
	push @errs, new HTTP::OAI::Error(code=>'badArgument',message=>'This repository does not support flow-control');
}

my $r;
if( @errs ) {
	$r = HTTP::OAI::Response->new(
		requestURL=>self_url()
	);
	$r->errors(@errs);
} else {
	my %attr = CGI::Vars();
	my $verb = delete($attr{'verb'});
	$r = $h->$verb(%attr);
	$r->requestURL(self_url());
	if( 'Identify' eq $verb && ref($r) eq 'HTTP::OAI::Identify' ) {
		$r->baseURL(url());
	}
}

# oaireal: was
#   $r->set_handler(XML::SAX::Writer->new(Output=>\*STDOUT));
#   $r->generate;
my $driver = HTTP::OAI::SAX::Driver->new(
	Handler => XML::SAX::Writer->new(Output=>\*STDOUT),
);
$r->version('2.0');
$driver->start_oai_pmh;
$r->generate($driver);
$driver->end_oai_pmh;
