# Provider requirements, provider configurations and resources of
# several providers; a moduledoc fixture (tofu reads it with a fake
# provider that has every type).

terraform {
  required_version = ">= 1.6.0, < 2.0.0"
  required_providers {
    aws = {
      source                = "hashicorp/aws"
      version               = ">= 5.0.0, < 7.0.0"
      configuration_aliases = [aws.east]
    }
    cloud = {
      source = "example.com/acme/cloud"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.6"
    }
  }
}

resource "aws_vpc" "this" {}

resource "aws_subnet" "east" {
  provider = aws.east
}

data "aws_ami" "ubuntu" {}

resource "cloud_thing" "t" {}

resource "random_pet" "name" {}

data "cloud_zone" "z" {
  provider = cloud
}

ephemeral "aws_secret" "token" {}

# A provider block's deprecated version argument, and a provider implied
# by a resource type alone.
provider "google" {
  version = ">= 4.0.0"
}

resource "null_resource" "implied" {}
